package deploy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// cluster runs a stream of Kubernetes manifests as a one-node cluster of
// local processes: the API server's Secrets and RBAC (kubeapi_test.go),
// the controllers' pods (a StatefulSet's ordinals, a Deployment's replicas
// or its HPA's minimum, a Job's retries), kubelet's volumes, environment
// and probes (kubepod_test.go), and cluster DNS as each pod's /etc/hosts.
// With helm set, Helm's order: pre-install hooks by weight, waiting for
// their Jobs, before the release's objects; without it, kubectl apply's:
// everything at once, pods waiting for the Secrets they mount.
//
// What it does not do: schedule (one node), enforce resources, run
// NetworkPolicies or the Prometheus operator, or proxy cluster IPs (a
// ClusterIP Service's name does not resolve; nothing in the chart calls one
// from inside).
type cluster struct {
	t      *testing.T
	net    *network
	api    *apiServer
	img    *images
	ns     string
	helm   bool
	wheels string // the local PyPI mirror's directory (PIP_FIND_LINKS)
	// edit, when set, changes every pod spec before it starts (a test that
	// checks a broken file fails).
	edit func(owner string, spec *corev1.PodSpec)

	services        []*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	serviceAccounts map[string]bool
	hpas            []*autoscalingv2.HorizontalPodAutoscaler

	mu       sync.Mutex
	pods     []*pod
	failures []error
	closed   bool // the test is over: background work stops
}

// pod is one pod of the cluster.
type pod struct {
	c           *cluster
	name, owner string // owner: "StatefulSet/x", "Deployment/y", "Job/z"
	labels      map[string]string
	annotations map[string]string
	spec        corev1.PodSpec
	host        *host
	hostname    string
	subdomain   string
	dir         string

	mu    sync.Mutex
	ready bool
	procs []*proc
	done  chan struct{} // closed when a Job's pod has finished
	err   error         // why it failed, when it did
}

func newCluster(t *testing.T, n *network, img *images, ns string, helm bool, wheels string) *cluster {
	c := &cluster{t: t, net: n, img: img, ns: ns, helm: helm, wheels: wheels,
		configMaps: map[string]*corev1.ConfigMap{}, serviceAccounts: map[string]bool{"default": true}}
	c.api = newAPIServer(t, n.hostIP)
	t.Cleanup(func() { // before the network's cleanup removes the files
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	})
	c.configMaps["kube-root-ca.crt"] = &corev1.ConfigMap{Data: map[string]string{"ca.crt": string(c.api.ca)}}
	return c
}

func (c *cluster) configMap(name string) *corev1.ConfigMap {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.configMaps[name]
}

// fail records a failure that makes the stack unusable.
func (c *cluster) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, err)
}

// apply creates objs (decoded by decodeStrict) in Helm's or kubectl's order.
func (c *cluster) apply(objs []object) error {
	var hooks, release []object
	for _, o := range objs {
		if c.helm && strings.Contains(annotations(o.obj)["helm.sh/hook"], "pre-install") {
			hooks = append(hooks, o)
		} else {
			release = append(release, o)
		}
	}
	sort.SliceStable(hooks, func(i, j int) bool {
		wi, _ := strconv.Atoi(annotations(hooks[i].obj)["helm.sh/hook-weight"])
		wj, _ := strconv.Atoi(annotations(hooks[j].obj)["helm.sh/hook-weight"])
		if wi != wj {
			return wi < wj
		}
		return slices.Index(installOrder, hooks[i].kind) < slices.Index(installOrder, hooks[j].kind)
	})
	for _, h := range hooks {
		c.create([]object{h})
		if j, ok := h.obj.(*batchv1.Job); ok {
			if err := c.waitJob(j); err != nil {
				return fmt.Errorf("pre-install hook %s: %w", j.Name, err)
			}
		}
	}
	c.create(release)
	return nil
}

func annotations(obj any) map[string]string {
	switch o := obj.(type) {
	case *batchv1.Job:
		return o.Annotations
	case *corev1.ServiceAccount:
		return o.Annotations
	case *rbacv1.Role:
		return o.Annotations
	case *rbacv1.RoleBinding:
		return o.Annotations
	case *corev1.Secret:
		return o.Annotations
	case *corev1.ConfigMap:
		return o.Annotations
	}
	return nil
}

// create stores objs and starts the pods of their workloads, once every
// pod's address is known (so /etc/hosts can name them all).
func (c *cluster) create(objs []object) {
	var pods []*pod
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *corev1.Secret:
			x.Namespace = c.ns
			for k, v := range x.StringData {
				if x.Data == nil {
					x.Data = map[string][]byte{}
				}
				x.Data[k] = []byte(v)
			}
			c.api.add(x)
		case *corev1.ConfigMap:
			c.mu.Lock()
			c.configMaps[x.Name] = x
			c.mu.Unlock()
		case *corev1.ServiceAccount:
			c.serviceAccounts[x.Name] = true
		case *rbacv1.Role:
			x.Namespace = c.ns
			c.api.add(x)
		case *rbacv1.RoleBinding:
			x.Namespace = c.ns
			c.api.add(x)
		case *corev1.Service:
			c.services = append(c.services, x)
		case *autoscalingv2.HorizontalPodAutoscaler:
			c.hpas = append(c.hpas, x)
		}
	}
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *appsv1.StatefulSet:
			for i := range int(ptrOr(x.Spec.Replicas, 1)) {
				p := c.newPod(fmt.Sprintf("%s-%d", x.Name, i), "StatefulSet/"+x.Name, x.Spec.Template)
				p.labels["apps.kubernetes.io/pod-index"] = strconv.Itoa(i)
				p.labels["statefulset.kubernetes.io/pod-name"] = p.name
				p.hostname, p.subdomain = p.name, x.Spec.ServiceName
				pods = append(pods, p)
			}
		case *appsv1.Deployment:
			n := int(ptrOr(x.Spec.Replicas, 1))
			for _, h := range c.hpas {
				if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == x.Name {
					n = max(n, int(ptrOr(h.Spec.MinReplicas, 1)))
				}
			}
			for range n {
				pods = append(pods, c.newPod(x.Name+"-"+randomHex(3), "Deployment/"+x.Name, x.Spec.Template))
			}
		case *batchv1.Job:
			if !c.helm || !strings.Contains(x.Annotations["helm.sh/hook"], "pre-install") {
				go func() {
					if err := c.waitJob(x); err != nil {
						c.fail(fmt.Errorf("Job %s: %w", x.Name, err))
					}
				}()
			}
		}
	}
	c.startPods(pods)
}

func ptrOr(v *int32, d int32) int32 {
	if v == nil {
		return d
	}
	return *v
}

func (c *cluster) newPod(name, owner string, tmpl corev1.PodTemplateSpec) *pod {
	p := &pod{c: c, name: name, owner: owner, spec: *tmpl.Spec.DeepCopy(), labels: map[string]string{},
		annotations: map[string]string{}, hostname: name, done: make(chan struct{})}
	for k, v := range tmpl.Labels {
		p.labels[k] = v
	}
	for k, v := range tmpl.Annotations {
		p.annotations[k] = v
	}
	if len(p.hostname) > 63 {
		p.hostname = p.hostname[:63]
	}
	if c.edit != nil {
		c.edit(owner, &p.spec)
	}
	p.dir = filepath.Join(c.net.state, "pods", name)
	p.host = c.net.addHost(name)
	return p
}

// startPods adds pods to the cluster, rewrites every pod's /etc/hosts and
// starts them.
func (c *cluster) startPods(pods []*pod) {
	c.mu.Lock()
	c.pods = append(c.pods, pods...)
	c.mu.Unlock()
	c.writeHosts()
	for _, p := range pods {
		go p.run()
	}
}

// dnsNames is the cluster DNS the pods see: kubernetes.default, every
// pod's own FQDN, and every headless Service's pods (all of them with
// publishNotReadyAddresses, else the ready ones), under each name a pod in
// the namespace can use.
func (c *cluster) dnsNames() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string][]string{}
	add := func(ips []string, svc string) {
		for _, n := range []string{svc, svc + "." + c.ns, svc + "." + c.ns + ".svc", svc + "." + c.ns + ".svc.cluster.local"} {
			names[n] = append(names[n], ips...)
		}
	}
	names["kubernetes.default.svc.cluster.local"] = []string{c.api.host}
	names["kubernetes.default.svc"] = []string{c.api.host}
	names["kubernetes.default"] = []string{c.api.host}
	for _, s := range c.services {
		if s.Spec.ClusterIP != corev1.ClusterIPNone {
			continue
		}
		var ips []string
		for _, p := range c.pods {
			p.mu.Lock()
			ok := (p.ready || s.Spec.PublishNotReadyAddresses) && p.err == nil
			p.mu.Unlock()
			if ok && subset(s.Spec.Selector, p.labels) {
				ips = append(ips, p.host.ip)
				if p.subdomain == s.Name {
					add([]string{p.host.ip}, p.hostname+"."+s.Name)
				}
			}
		}
		add(ips, s.Name)
	}
	return names
}

// writeHosts rewrites every pod's /etc/hosts (after a pod was added or
// became ready); it runs from pods' goroutines, so a failure is the
// cluster's, not a t.Fatal.
func (c *cluster) writeHosts() {
	names := c.dnsNames()
	c.mu.Lock()
	pods, closed := append([]*pod{}, c.pods...), c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	for _, p := range pods {
		own := []string{p.hostname}
		if p.subdomain != "" {
			own = append([]string{fmt.Sprintf("%s.%s.%s.svc.cluster.local", p.hostname, p.subdomain, c.ns)}, own...)
		}
		if err := p.host.writeHosts(own, names); err != nil {
			c.fail(fmt.Errorf("pod %s /etc/hosts: %w", p.name, err))
		}
	}
}

// run is kubelet for one pod: volumes (waiting for their sources), init
// containers one by one to success, then the containers and their probes.
// A Job's pod ends when its containers exit; any other pod's container
// exiting is a failure (the file describes a process that dies).
func (p *pod) run() {
	c := p.c
	if !c.serviceAccounts[p.serviceAccount()] {
		p.finish(fmt.Errorf("pod %s: service account %q does not exist (the API server rejects the pod)", p.name, p.serviceAccount()))
		return
	}
	var vols map[string]string
	for deadline := time.Now().Add(3 * time.Minute); ; {
		var err error
		if vols, err = p.volumes(); err == nil {
			break
		}
		var w errWaiting
		if !errors.As(err, &w) || time.Now().After(deadline) {
			p.finish(fmt.Errorf("pod %s: %w", p.name, err))
			return
		}
		_ = os.RemoveAll(filepath.Join(p.dir, "volumes"))
		time.Sleep(200 * time.Millisecond)
	}
	for _, ic := range p.spec.InitContainers {
		pr, err := p.start(ic, vols)
		if err != nil {
			p.finish(err)
			return
		}
		<-pr.done
		if pr.err != nil {
			p.finish(fmt.Errorf("pod %s init container %s: %v\n%s", p.name, ic.Name, pr.err, pr.log.tail(30)))
			return
		}
	}
	var wg sync.WaitGroup
	for _, ctr := range p.spec.Containers {
		pr, err := p.start(ctr, vols)
		if err != nil {
			p.finish(err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-pr.done
			if !p.isJob() {
				c.fail(fmt.Errorf("pod %s container %s exited: %v\n%s", p.name, ctr.Name, errOrZero(pr.err), pr.log.tail(30)))
			} else if pr.err != nil {
				p.setErr(fmt.Errorf("pod %s container %s: %v\n%s", p.name, ctr.Name, pr.err, pr.log.tail(30)))
			}
		}()
	}
	if p.isJob() {
		wg.Wait()
		p.finish(p.getErr())
		return
	}
	go p.probe()
}

func errOrZero(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

func (p *pod) start(ctr corev1.Container, vols map[string]string) (*proc, error) {
	spec, err := p.containerSpec(ctr, vols)
	if err != nil {
		return nil, fmt.Errorf("pod %s container %s: %w", p.name, ctr.Name, err)
	}
	pr := p.c.net.startContainer(p.host, spec)
	p.mu.Lock()
	p.procs = append(p.procs, pr)
	p.mu.Unlock()
	return pr, nil
}

func (p *pod) setErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *pod) getErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// finish ends a pod that will run no more; an error fails the cluster
// unless the pod is a Job's (whose controller decides).
func (p *pod) finish(err error) {
	p.setErr(err)
	if err != nil && !p.isJob() {
		p.c.fail(err)
	}
	close(p.done)
}

// waitJob runs a Job's pods until one succeeds, retrying up to backoffLimit.
func (c *cluster) waitJob(j *batchv1.Job) error {
	tries := int(ptrOr(j.Spec.BackoffLimit, 6)) + 1
	var errs []error
	for range tries {
		p := c.newPod(j.Name+"-"+randomHex(3), "Job/"+j.Name, j.Spec.Template)
		c.startPods([]*pod{p})
		<-p.done
		if p.err == nil {
			return nil
		}
		errs = append(errs, p.err)
		if len(errs) >= 2 && errs[len(errs)-1].Error() == errs[len(errs)-2].Error() {
			break // the same failure twice: it is not going to pass
		}
	}
	return fmt.Errorf("failed %d times: %w", len(errs), errors.Join(errs...))
}

// probe runs each container's startup probe to success within its
// failureThreshold × periodSeconds, then its readiness probe; the pod is
// ready when every container is. Probes run more often than their period,
// to keep the test fast; their deadlines are the file's.
func (p *pod) probe() {
	for _, ctr := range p.spec.Containers {
		if sp := ctr.StartupProbe; sp != nil {
			window := time.Duration(sp.InitialDelaySeconds+max(sp.PeriodSeconds, 1)*max(sp.FailureThreshold, 1)) * time.Second
			if err := p.until(ctr, sp, window); err != nil {
				p.c.fail(fmt.Errorf("pod %s container %s: startup probe failed for %v (kubelet restarts it): %w", p.name, ctr.Name, window, err))
				return
			}
		}
		if rp := ctr.ReadinessProbe; rp != nil {
			if err := p.until(ctr, rp, 5*time.Minute); err != nil {
				p.c.fail(fmt.Errorf("pod %s container %s: never ready: %w", p.name, ctr.Name, err))
				return
			}
		}
	}
	p.mu.Lock()
	p.ready = true
	p.mu.Unlock()
	p.c.writeHosts()
}

func (p *pod) until(ctr corev1.Container, pr *corev1.Probe, window time.Duration) error {
	deadline := time.Now().Add(window)
	var err error
	for time.Now().Before(deadline) {
		if err = p.check(ctr, pr); err == nil {
			return nil
		}
		if p.getErr() != nil {
			return p.getErr()
		}
		p.c.mu.Lock()
		closed := p.c.closed
		p.c.mu.Unlock()
		if closed {
			return errors.New("the test is over")
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

// check runs one probe from outside the pod, as kubelet does.
func (p *pod) check(ctr corev1.Container, pr *corev1.Probe) error {
	timeout := time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second
	switch {
	case pr.TCPSocket != nil:
		port, err := portNumber(ctr, pr.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(p.host.ip, strconv.Itoa(port)), timeout)
		if err != nil {
			return err
		}
		return conn.Close()
	case pr.HTTPGet != nil:
		port, err := portNumber(ctr, pr.HTTPGet.Port)
		if err != nil {
			return err
		}
		cl := http.Client{Timeout: timeout}
		resp, err := cl.Get(fmt.Sprintf("http://%s:%d%s", p.host.ip, port, pr.HTTPGet.Path))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s: %s", pr.HTTPGet.Path, resp.Status)
		}
		return nil
	}
	return errors.New("unsupported probe (this harness runs tcpSocket and httpGet)")
}

func portNumber(ctr corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, cp := range ctr.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", ctr.Name, port.StrVal)
}

// waitReady waits until every pod of a StatefulSet or Deployment is ready,
// and fails at the first failure (a container that exited, a probe that
// timed out) with what the containers printed.
func (c *cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		failures := append([]error{}, c.failures...)
		var waiting []string
		for _, p := range c.pods {
			p.mu.Lock()
			if !p.ready && !p.isJob() {
				waiting = append(waiting, p.name)
			}
			p.mu.Unlock()
		}
		c.mu.Unlock()
		switch {
		case len(failures) > 0:
			return errors.Join(failures...)
		case len(waiting) == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("after %v, not ready: %v\n%s", timeout, waiting, c.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stillUp is waitReady's failure check alone: nil while nothing has failed.
func (c *cluster) stillUp() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.failures...)
}

// logs is the tail of every container's output.
func (c *cluster) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.pods {
		p.mu.Lock()
		for _, pr := range p.procs {
			fmt.Fprintf(&b, "--- %s\n%s\n", pr.name, pr.log.tail(15))
		}
		p.mu.Unlock()
	}
	return b.String()
}

// podsOf returns the pods an owner ("StatefulSet/x") made.
func (c *cluster) podsOf(owner string) []*pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*pod
	for _, p := range c.pods {
		if p.owner == owner {
			out = append(out, p)
		}
	}
	return out
}

func (p *pod) isJob() bool { return strings.HasPrefix(p.owner, "Job/") }
