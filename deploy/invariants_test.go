package deploy

import (
	"cmp"
	"encoding/json"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// env is what the manifests are checked against: the code's flags and
// routes and the chart's appVersion.
type env struct {
	flags      map[string]flagSet
	routes     map[string]bool
	appVersion string
}

func loadEnv(t *testing.T) env {
	t.Helper()
	flags, err := commandFlags("../cmd/tandem")
	if err != nil {
		t.Fatal(err)
	}
	routes, err := httpRoutes("../frontend/server")
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadChart(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return env{flags: flags, routes: routes, appVersion: c.meta.AppVersion}
}

// stack is one rendered deployment: exactly one engine StatefulSet and one
// frontend Deployment, and what goes with them.
type stack struct {
	namespace string
	wantTag   string // the image tag the values ask for; "" for the chart's appVersion
	engine    *appsv1.StatefulSet
	frontend  *appsv1.Deployment
	services  []*corev1.Service
	secrets   []*corev1.Secret
	hpas      []*autoscalingv2.HorizontalPodAutoscaler
	pdbs      []*policyv1.PodDisruptionBudget
	netpols   []*networkingv1.NetworkPolicy
	monitors  []*monitoringv1.ServiceMonitor
}

func newStack(t *testing.T, objs []object, namespace string) *stack {
	t.Helper()
	s := &stack{namespace: namespace}
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *appsv1.StatefulSet:
			if s.engine != nil {
				t.Fatalf("two StatefulSets: %s and %s", s.engine.Name, x.Name)
			}
			s.engine = x
		case *appsv1.Deployment:
			if s.frontend != nil {
				t.Fatalf("two Deployments: %s and %s", s.frontend.Name, x.Name)
			}
			s.frontend = x
		case *corev1.Service:
			s.services = append(s.services, x)
		case *corev1.Secret:
			s.secrets = append(s.secrets, x)
		case *autoscalingv2.HorizontalPodAutoscaler:
			s.hpas = append(s.hpas, x)
		case *policyv1.PodDisruptionBudget:
			s.pdbs = append(s.pdbs, x)
		case *networkingv1.NetworkPolicy:
			s.netpols = append(s.netpols, x)
		case *monitoringv1.ServiceMonitor:
			s.monitors = append(s.monitors, x)
		}
	}
	if s.engine == nil || s.frontend == nil {
		t.Fatalf("want an engine StatefulSet and a frontend Deployment, got %d objects", len(objs))
	}
	return s
}

func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

func (s *stack) frontendAPIKeySecret() string {
	for _, c := range s.frontend.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "TANDEM_API_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return e.ValueFrom.SecretKeyRef.Name
			}
		}
	}
	return ""
}

// check asserts every invariant that ties the stack together.
func (e env) check(t *testing.T, s *stack) {
	t.Helper()
	eng := container(t, &s.engine.Spec.Template.Spec, "engine")
	fe := container(t, &s.frontend.Spec.Template.Spec, "frontend")
	ea, err := parseArgs(eng.Args, e.flags)
	if err != nil {
		t.Fatalf("engine args: %v", err)
	}
	fa, err := parseArgs(fe.Args, e.flags)
	if err != nil {
		t.Fatalf("frontend args: %v", err)
	}
	if ea.cmd != "engine" || fa.cmd != "frontend" {
		t.Fatalf("commands: engine container runs %q, frontend container runs %q", ea.cmd, fa.cmd)
	}
	engPods := s.engine.Spec.Template.Labels
	fePods := s.frontend.Spec.Template.Labels

	// Engine: --listen and --events bind the declared container ports.
	listenPort := endpointPort(t, "engine --listen", ea.flags["listen"])
	if p := containerPort(t, eng, intstr.FromString("zmq")); p != listenPort {
		t.Errorf("engine --listen port %d, container port zmq %d", listenPort, p)
	}
	if ev, ok := ea.flags["events"]; ok {
		if p, q := endpointPort(t, "engine --events", ev), containerPort(t, eng, intstr.FromString("events")); p != q {
			t.Errorf("engine --events port %d, container port events %d", p, q)
		}
	}
	// --kv-events-config is JSON whose endpoint is --events (the engine
	// refuses two) and whose replay endpoint has a container port.
	if raw, ok := ea.flags["kv-events-config"]; ok {
		var kv struct {
			Endpoint       string  `json:"endpoint"`
			ReplayEndpoint *string `json:"replay_endpoint"`
			Topic          string  `json:"topic"`
		}
		if err := json.Unmarshal([]byte(raw), &kv); err != nil {
			t.Errorf("engine --kv-events-config %q: %v", raw, err)
		}
		if kv.Endpoint != ea.flags["events"] {
			t.Errorf("engine --kv-events-config endpoint %q, --events %q", kv.Endpoint, ea.flags["events"])
		}
		if kv.ReplayEndpoint != nil {
			if p, q := endpointPort(t, "kv replay_endpoint", *kv.ReplayEndpoint), containerPort(t, eng, intstr.FromString("kv-replay")); p != q {
				t.Errorf("replay_endpoint port %d, container port kv-replay %d", p, q)
			}
		}
		if strings.Contains(kv.Topic, "{pod}") && !slices.ContainsFunc(eng.Env, func(e corev1.EnvVar) bool {
			return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
		}) {
			t.Errorf("topic %q needs $POD_NAME from metadata.name", kv.Topic)
		}
	}
	for _, pr := range probes(eng) {
		if pr.probe == nil {
			t.Errorf("engine has no %s probe", pr.kind)
			continue
		}
		if pr.probe.TCPSocket == nil {
			t.Errorf("engine %s probe: want a TCP probe on the ROUTER port (the engine has no HTTP port)", pr.kind)
			continue
		}
		if p := containerPort(t, eng, pr.probe.TCPSocket.Port); p != listenPort {
			t.Errorf("engine %s probe on port %d, ROUTER listens on %d", pr.kind, p, listenPort)
		}
	}
	checkEnvRefs(t, eng)
	checkEnvRefs(t, fe)

	// Headless Service: selects the engine pods, names the StatefulSet's
	// service, and its port reaches the ROUTER.
	headless := s.service(func(svc *corev1.Service) bool { return svc.Spec.ClusterIP == corev1.ClusterIPNone })
	if headless == nil {
		t.Fatal("no headless Service for the engines")
	}
	if s.engine.Spec.ServiceName != headless.Name {
		t.Errorf("StatefulSet serviceName %q, headless Service %q", s.engine.Spec.ServiceName, headless.Name)
	}
	if !subset(headless.Spec.Selector, engPods) || subset(headless.Spec.Selector, fePods) {
		t.Errorf("headless Service selector %v must select engine pods %v and not frontend pods %v", headless.Spec.Selector, engPods, fePods)
	}
	if !subset(s.engine.Spec.Selector.MatchLabels, engPods) {
		t.Errorf("StatefulSet selector %v does not match its pods %v", s.engine.Spec.Selector.MatchLabels, engPods)
	}

	// Frontend --engines names the headless Service and its ROUTER port.
	u, err := url.Parse(fa.flags["engines"])
	if err != nil || u.Scheme != "dns+tcp" {
		t.Fatalf("frontend --engines %q: want dns+tcp://<headless service>:<port>", fa.flags["engines"])
	}
	host, portStr, _ := net.SplitHostPort(u.Host)
	labelsOfHost := strings.Split(host, ".")
	if labelsOfHost[0] != headless.Name {
		t.Errorf("frontend --engines host %q, headless Service %q", host, headless.Name)
	}
	if len(labelsOfHost) > 1 && (labelsOfHost[1] != s.namespace || len(labelsOfHost) > 2 && labelsOfHost[2] != "svc") {
		t.Errorf("frontend --engines host %q: want %s.%s.svc.<cluster domain>", host, headless.Name, s.namespace)
	}
	svcPort := servicePort(t, headless, portStr)
	if p := containerPort(t, eng, svcPort.TargetPort); p != listenPort {
		t.Errorf("headless Service port %d targets %d, ROUTER listens on %d", svcPort.Port, p, listenPort)
	}

	// Frontend: --port is the container port http; probes hit real routes.
	httpPort, err := strconv.Atoi(fa.flags["port"])
	if err != nil {
		t.Fatalf("frontend --port %q: %v", fa.flags["port"], err)
	}
	if p := containerPort(t, fe, intstr.FromString("http")); p != httpPort {
		t.Errorf("frontend --port %d, container port http %d", httpPort, p)
	}
	if fa.flags["host"] != "0.0.0.0" {
		t.Errorf("frontend --host %q: a pod must listen on 0.0.0.0", fa.flags["host"])
	}
	for _, pr := range probes(fe) {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("frontend %s probe: want an HTTP GET probe", pr.kind)
			continue
		}
		if !e.routes[pr.probe.HTTPGet.Path] {
			t.Errorf("frontend %s probe GET %s: no such route (routes %v)", pr.kind, pr.probe.HTTPGet.Path, keys(e.routes))
		}
		if p := containerPort(t, fe, pr.probe.HTTPGet.Port); p != httpPort {
			t.Errorf("frontend %s probe on port %d, frontend listens on %d", pr.kind, p, httpPort)
		}
	}
	if fe.ReadinessProbe != nil && fe.ReadinessProbe.HTTPGet != nil && fe.ReadinessProbe.HTTPGet.Path != "/health" {
		t.Errorf("frontend readiness probe GET %s: want /health (503 while no engine is ready)", fe.ReadinessProbe.HTTPGet.Path)
	}
	if fe.LivenessProbe != nil && fe.LivenessProbe.HTTPGet != nil && fe.LivenessProbe.HTTPGet.Path == "/health" {
		t.Errorf("frontend liveness probe GET /health would restart every frontend while engines are down")
	}

	// Frontend Service: selects frontend pods; its http port reaches --port.
	feSvc := s.service(func(svc *corev1.Service) bool {
		return svc.Spec.ClusterIP != corev1.ClusterIPNone && subset(svc.Spec.Selector, fePods)
	})
	if feSvc == nil {
		t.Fatal("no Service selects the frontend pods")
	}
	if subset(feSvc.Spec.Selector, engPods) {
		t.Errorf("frontend Service %s also selects engine pods", feSvc.Name)
	}
	if p := containerPort(t, fe, servicePort(t, feSvc, "http").TargetPort); p != httpPort {
		t.Errorf("frontend Service port http targets %d, frontend listens on %d", p, httpPort)
	}

	e.checkImages(t, s, eng, fe, ea)
	checkResources(t, s, eng, ea)
	checkModel(t, s, eng, fe, ea)
	s.checkScaling(t, feSvc, httpPort, fe, e.routes)
	s.checkSecret(t)
	s.checkCurve(t, eng, fe, ea, fa)
	s.checkNetworkPolicy(t, listenPort)
	s.checkEngineMetrics(t, headless, eng, ea, fa)
}

// checkEngineMetrics: each engine's own /metrics (--metrics-address) is
// its container port metrics, the headless Service's port metrics and
// what the engines' ServiceMonitor and prometheus.io annotations scrape;
// the NetworkPolicy lets Prometheus reach it from anywhere. The frontends
// leave the engine series out (--disable-engine-metrics) exactly when
// the engines export them, so each engine's numbers are exported once.
func (s *stack) checkEngineMetrics(t *testing.T, headless *corev1.Service, eng *corev1.Container, ea, fa parsedArgs) {
	t.Helper()
	addr, own := ea.flags["metrics-address"]
	_, off := fa.flags["disable-engine-metrics"]
	if own != off {
		t.Errorf("engine --metrics-address %q and frontend --disable-engine-metrics %v: want both or neither (else each engine's series are exported by every frontend and the engine, or by none)", addr, off)
	}
	if !own {
		return
	}
	_, portStr, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil {
		t.Fatalf("engine --metrics-address %q: want host:port", addr)
	}
	if p := containerPort(t, eng, intstr.FromString("metrics")); p != port {
		t.Errorf("engine --metrics-address port %d, container port metrics %d", port, p)
	}
	if p := containerPort(t, eng, servicePort(t, headless, "metrics").TargetPort); p != port {
		t.Errorf("headless Service port metrics targets %d, the engine's /metrics is on %d", p, port)
	}
	ann := s.engine.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != portStr || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("engine pod annotations %v: want prometheus.io/scrape, port %d and path /metrics", ann, port)
	}
	for _, m := range s.monitors {
		if !subset(m.Spec.Selector.MatchLabels, s.engine.Spec.Template.Labels) {
			continue
		}
		if !subset(m.Spec.Selector.MatchLabels, headless.Labels) {
			t.Errorf("ServiceMonitor %s selector %v does not select Service %s", m.Name, m.Spec.Selector.MatchLabels, headless.Name)
		}
		for _, ep := range m.Spec.Endpoints {
			if ep.Port != "metrics" || ep.Path != "/metrics" {
				t.Errorf("ServiceMonitor %s scrapes port %q path %q: want metrics, /metrics", m.Name, ep.Port, ep.Path)
			}
		}
	}
	for _, np := range s.netpols {
		if !subset(np.Spec.PodSelector.MatchLabels, s.engine.Spec.Template.Labels) {
			continue
		}
		open := false
		for _, in := range np.Spec.Ingress {
			for _, p := range in.Ports {
				open = open || len(in.From) == 0 && p.Port != nil && p.Port.IntValue() == port
			}
		}
		if !open {
			t.Errorf("NetworkPolicy %s does not let Prometheus reach the engines' metrics port %d", np.Name, port)
		}
	}
}

type namedProbe struct {
	kind  string
	probe *corev1.Probe
}

func probes(c *corev1.Container) []namedProbe {
	return []namedProbe{{"startup", c.StartupProbe}, {"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}}
}

// endpointPort is the port of a ZeroMQ tcp://host:port endpoint.
func endpointPort(t *testing.T, what, ep string) int {
	t.Helper()
	rest, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		t.Fatalf("%s %q: want tcp://host:port", what, ep)
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		t.Fatalf("%s %q: %v", what, ep, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s %q: %v", what, ep, err)
	}
	return n
}

// containerPort resolves a port reference (a number or a name) against
// the container's declared ports.
func containerPort(t *testing.T, c *corev1.Container, ref intstr.IntOrString) int {
	t.Helper()
	for _, p := range c.Ports {
		if ref.Type == intstr.String && p.Name == ref.StrVal || ref.Type == intstr.Int && p.ContainerPort == ref.IntVal {
			return int(p.ContainerPort)
		}
	}
	t.Errorf("container %s declares no port %s", c.Name, ref.String())
	return 0
}

// servicePort finds a Service port by name or number.
func servicePort(t *testing.T, svc *corev1.Service, ref string) corev1.ServicePort {
	t.Helper()
	for _, p := range svc.Spec.Ports {
		if p.Name == ref || strconv.Itoa(int(p.Port)) == ref {
			return p
		}
	}
	t.Fatalf("Service %s has no port %s", svc.Name, ref)
	return corev1.ServicePort{}
}

func (s *stack) service(match func(*corev1.Service) bool) *corev1.Service {
	for _, svc := range s.services {
		if match(svc) {
			return svc
		}
	}
	return nil
}

// subset reports whether every label of sel is in labels (and sel is not
// empty, which would select everything).
func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkEnvRefs: every $(VAR) in the args is defined in the container's env
// (Kubernetes leaves an undefined one as literal text).
func checkEnvRefs(t *testing.T, c *corev1.Container) {
	t.Helper()
	defined := map[string]bool{}
	for _, e := range c.Env {
		defined[e.Name] = true
	}
	for _, a := range c.Args {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				t.Errorf("container %s: arg %q uses $(%s), which its env does not define", c.Name, a, m[1])
			}
		}
	}
}

// checkImages: engines and frontends run one image repository at one tag
// (the chart's appVersion); a CUDA engine runs its -cuda variant.
func (e env) checkImages(t *testing.T, s *stack, eng, fe *corev1.Container, ea parsedArgs) {
	t.Helper()
	feRepo, feTag := splitImage(fe.Image)
	engRepo, engTag := splitImage(eng.Image)
	if feRepo != engRepo {
		t.Errorf("engine image %s and frontend image %s differ in repository", eng.Image, fe.Image)
	}
	wantEngTag := feTag
	if strings.HasPrefix(ea.flags["device"], "cuda") {
		wantEngTag = feTag + "-cuda"
	}
	if engTag != wantEngTag {
		t.Errorf("engine image tag %q, want %q (frontend %q, --device %q)", engTag, wantEngTag, feTag, ea.flags["device"])
	}
	if feTag == "" || feTag == "latest" {
		t.Errorf("frontend image %q: pin a tag", fe.Image)
	}
	if want := cmp.Or(s.wantTag, e.appVersion); feTag != want {
		t.Errorf("frontend image tag %q, want %q", feTag, want)
	}
}

func splitImage(image string) (repo, tag string) {
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

// checkResources: every container has CPU and memory requests and a memory
// limit; a CUDA engine holds exactly one GPU; a CPU engine's threads and KV
// cache fit its limits (inside a container the engine's defaults would
// read the node's CPUs and memory).
func checkResources(t *testing.T, s *stack, eng *corev1.Container, ea parsedArgs) {
	t.Helper()
	for _, spec := range []*corev1.PodSpec{&s.engine.Spec.Template.Spec, &s.frontend.Spec.Template.Spec} {
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
					t.Errorf("container %s: no %s request", c.Name, r)
				}
			}
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
				t.Errorf("container %s: no memory limit", c.Name)
			}
		}
	}
	gpus := eng.Resources.Limits["nvidia.com/gpu"]
	device := ea.flags["device"]
	switch {
	case strings.HasPrefix(device, "cuda"):
		if gpus.Value() != 1 {
			t.Errorf("engine --device %s: want limits nvidia.com/gpu: 1 (one engine per GPU), got %s", device, gpus.String())
		}
	case device == "cpu":
		if !gpus.IsZero() {
			t.Errorf("engine --device cpu holds %s GPUs", gpus.String())
		}
		cpu := eng.Resources.Limits[corev1.ResourceCPU]
		if threads, err := strconv.Atoi(ea.flags["threads"]); err != nil || int64(threads) != cpu.Value() {
			t.Errorf("engine --threads %q, want the CPU limit %s", ea.flags["threads"], cpu.String())
		}
		kv, err := resource.ParseQuantity(ea.flags["kv-cache-memory"])
		mem := eng.Resources.Limits[corev1.ResourceMemory]
		if err != nil || kv.Cmp(mem) >= 0 {
			t.Errorf("engine --kv-cache-memory %q must be set and below the memory limit %s", ea.flags["kv-cache-memory"], mem.String())
		}
	default:
		t.Errorf("engine --device %q: want cpu or cuda:N", device)
	}
}

// checkModel: engines and frontends see the model at the same path (the
// frontend loads the tokenizer from the path the engine reports), and an
// emptyDir model volume is filled by an init container.
func checkModel(t *testing.T, s *stack, eng, fe *corev1.Container, ea parsedArgs) {
	t.Helper()
	model := ea.flags["model"]
	if model == "dummy" {
		return
	}
	if !path.IsAbs(model) {
		t.Fatalf("engine --model %q: want an absolute path in a mounted volume", model)
	}
	for _, w := range []struct {
		name string
		spec *corev1.PodSpec
		c    *corev1.Container
	}{{"engine", &s.engine.Spec.Template.Spec, eng}, {"frontend", &s.frontend.Spec.Template.Spec, fe}} {
		var vol string
		for _, m := range w.c.VolumeMounts {
			if strings.HasPrefix(model, strings.TrimSuffix(m.MountPath, "/")+"/") {
				vol = m.Name
			}
		}
		if vol == "" {
			t.Errorf("%s: no volume mounted over the model path %s", w.name, model)
			continue
		}
		for _, v := range w.spec.Volumes {
			if v.Name != vol || v.EmptyDir == nil {
				continue
			}
			filled := false
			for _, ic := range w.spec.InitContainers {
				for _, m := range ic.VolumeMounts {
					filled = filled || m.Name == vol && !m.ReadOnly
				}
			}
			if !filled {
				t.Errorf("%s: the model volume %s is an emptyDir no init container writes", w.name, vol)
			}
		}
	}
}

// checkScaling: the HPA scales the frontend Deployment (which then leaves
// replicas unset), the PDBs select the workloads, the ServiceMonitor
// scrapes the frontend Service's http port at /metrics.
func (s *stack) checkScaling(t *testing.T, feSvc *corev1.Service, httpPort int, fe *corev1.Container, routes map[string]bool) {
	t.Helper()
	for _, h := range s.hpas {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != s.frontend.Name {
			t.Errorf("HPA %s targets %s %s %s, want apps/v1 Deployment %s", h.Name, ref.APIVersion, ref.Kind, ref.Name, s.frontend.Name)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			t.Errorf("HPA %s: minReplicas %v, maxReplicas %d", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		if s.frontend.Spec.Replicas != nil {
			t.Errorf("Deployment %s sets replicas while HPA %s scales it: every apply would undo the HPA", s.frontend.Name, h.Name)
		}
	}
	engPods, fePods := s.engine.Spec.Template.Labels, s.frontend.Spec.Template.Labels
	for _, p := range s.pdbs {
		sel := p.Spec.Selector.MatchLabels
		if subset(sel, engPods) == subset(sel, fePods) {
			t.Errorf("PDB %s selector %v must select exactly one of the engine and frontend pods", p.Name, sel)
		}
	}
	for _, m := range s.monitors {
		if subset(m.Spec.Selector.MatchLabels, s.engine.Spec.Template.Labels) {
			continue // the engines' own /metrics: checkEngineMetrics
		}
		if !subset(m.Spec.Selector.MatchLabels, feSvc.Labels) {
			t.Errorf("ServiceMonitor %s selector %v does not select Service %s (labels %v)", m.Name, m.Spec.Selector.MatchLabels, feSvc.Name, feSvc.Labels)
		}
		if names := m.Spec.NamespaceSelector.MatchNames; len(names) > 0 && !contains(names, s.namespace) {
			t.Errorf("ServiceMonitor %s watches namespaces %v, not %s", m.Name, names, s.namespace)
		}
		if len(m.Spec.Endpoints) == 0 {
			t.Errorf("ServiceMonitor %s has no endpoints", m.Name)
		}
		for _, ep := range m.Spec.Endpoints {
			if ep.Port != "http" && ep.Port != "metrics" {
				t.Errorf("ServiceMonitor %s endpoint port %q: want the Service port named http or metrics", m.Name, ep.Port)
				continue
			}
			if p := containerPort(t, fe, servicePort(t, feSvc, ep.Port).TargetPort); p != httpPort {
				t.Errorf("ServiceMonitor %s scrapes port %d, frontend serves on %d", m.Name, p, httpPort)
			}
			if p := ep.Path; p != "" && !routes[p] {
				t.Errorf("ServiceMonitor %s scrapes %s: no such route", m.Name, p)
			}
		}
	}
}

// checkSecret: a Secret the frontend reads the API key from, if the stack
// creates it, holds the key.
func (s *stack) checkSecret(t *testing.T) {
	t.Helper()
	name := s.frontendAPIKeySecret()
	for _, c := range s.frontend.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "TANDEM_API_KEY" && e.Value != "" {
				t.Errorf("container %s: TANDEM_API_KEY in plain text; use a Secret", c.Name)
			}
			if e.Name != "TANDEM_API_KEY" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			for _, sec := range s.secrets {
				if sec.Name != name {
					continue
				}
				_, inData := sec.Data[e.ValueFrom.SecretKeyRef.Key]
				_, inString := sec.StringData[e.ValueFrom.SecretKeyRef.Key]
				if !inData && !inString {
					t.Errorf("Secret %s has no key %s", name, e.ValueFrom.SecretKeyRef.Key)
				}
			}
		}
	}
}

// checkNetworkPolicy: a policy on the engines admits the frontends to the
// ROUTER port.
func (s *stack) checkNetworkPolicy(t *testing.T, listenPort int) {
	t.Helper()
	engPods, fePods := s.engine.Spec.Template.Labels, s.frontend.Spec.Template.Labels
	for _, np := range s.netpols {
		if !subset(np.Spec.PodSelector.MatchLabels, engPods) {
			continue
		}
		admitted := false
		for _, in := range np.Spec.Ingress {
			fromFE := false
			for _, f := range in.From {
				fromFE = fromFE || f.PodSelector != nil && subset(f.PodSelector.MatchLabels, fePods)
			}
			for _, p := range in.Ports {
				admitted = admitted || fromFE && p.Port != nil && p.Port.IntValue() == listenPort
			}
		}
		if !admitted {
			t.Errorf("NetworkPolicy %s does not admit frontends to the engines' port %d", np.Name, listenPort)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
