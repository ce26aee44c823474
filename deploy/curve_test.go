package deploy

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// checkCurve: the engines either require CURVE with their own secret key
// and the frontends' public key, read from a mounted Secret that frontends
// mount their halves of too, or opt out with --insecure-engine-socket
// (and then frontends carry no keys).
func (s *stack) checkCurve(t *testing.T, eng, fe *corev1.Container, ea, fa parsedArgs) {
	t.Helper()
	_, insecure := ea.flags["insecure-engine-socket"]
	if insecure {
		for _, f := range []string{"curve-secret-key-file", "curve-authorized-keys"} {
			if _, ok := ea.flags[f]; ok {
				t.Errorf("engine has --insecure-engine-socket and --%s", f)
			}
		}
		if _, ok := fa.flags["engine-public-key"]; ok {
			t.Error("frontend has --engine-public-key while engines run without CURVE")
		}
		return
	}
	engSecret := mountedSecretItems(t, &s.engine.Spec.Template.Spec, eng, map[string]string{
		"curve-secret-key-file": ea.flags["curve-secret-key-file"], "curve-authorized-keys": ea.flags["curve-authorized-keys"]},
		map[string]string{"curve-secret-key-file": "engine.key", "curve-authorized-keys": "frontend.pub"})
	feSecret := mountedSecretItems(t, &s.frontend.Spec.Template.Spec, fe, map[string]string{
		"curve-secret-key-file": fa.flags["curve-secret-key-file"], "engine-public-key": fa.flags["engine-public-key"]},
		map[string]string{"curve-secret-key-file": "frontend.key", "engine-public-key": "engine.pub"})
	if engSecret != feSecret {
		t.Errorf("engines read their keys from Secret %q, frontends from %q", engSecret, feSecret)
	}
	for _, p := range []*corev1.PodTemplateSpec{&s.engine.Spec.Template, &s.frontend.Spec.Template} {
		if p.Annotations["tandem.dev/curve-generation"] == "" {
			t.Errorf("pod template %v has no tandem.dev/curve-generation annotation (a rotation would not roll it)", p.Labels)
		}
	}
}

// mountedSecretItems checks that each flag (name → path) names a file of a
// Secret volume the container mounts, holding the wanted Secret key, and
// returns the Secret's name.
func mountedSecretItems(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, paths, want map[string]string) string {
	t.Helper()
	var secret string
	for flag, p := range paths {
		if p == "" {
			t.Errorf("container %s: no --%s", c.Name, flag)
			continue
		}
		found := false
		for _, m := range c.VolumeMounts {
			rel, ok := strings.CutPrefix(p, m.MountPath+"/")
			if !ok {
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name != m.Name || v.Secret == nil {
					continue
				}
				secret = v.Secret.SecretName
				for _, it := range v.Secret.Items {
					found = found || path.Clean(it.Path) == rel && it.Key == want[flag]
				}
				if len(v.Secret.Items) == 0 {
					found = rel == want[flag]
				}
			}
		}
		if !found {
			t.Errorf("container %s --%s=%s: not the %s of a mounted Secret", c.Name, flag, p, want[flag])
		}
	}
	return secret
}
