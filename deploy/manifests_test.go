package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite deploy/k8s from the chart")

const (
	chartDir         = "helm/tandem"
	releaseName      = "tandem"
	releaseNamespace = "tandem"
)

// rendered is a committed manifest file and the values it is rendered with.
var rendered = []struct {
	file   string
	values string // overlay on values.yaml; "" for the defaults
}{
	{"k8s/tandem.yaml", ""},
	{"k8s/tandem-cpu.yaml", "helm/tandem/values-cpu.yaml"},
}

const renderedHeader = `# Rendered from deploy/helm/tandem (release %q, namespace %q%s); do not edit.
# Regenerate: go test ./deploy -run TestRenderedManifestsInSync -update
# Apply:      kubectl create namespace %[2]s && kubectl apply -n %[2]s -f deploy/%[4]s
`

// object is one decoded manifest document.
type object struct {
	kind, name string
	obj        any // a pointer to the k8s.io/api (or prometheus-operator) type
}

// newObject returns the typed object for a document's apiVersion and kind;
// a kind the deploy files do not use is an error.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "rbac.authorization.k8s.io/v1 Role":
		return &rbacv1.Role{}, nil
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		return &rbacv1.RoleBinding{}, nil
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	}
	return nil, fmt.Errorf("unexpected apiVersion %q kind %q", apiVersion, kind)
}

// decodeStrict decodes every document of a YAML stream into its typed
// object; unknown or duplicate fields are errors.
func decodeStrict(stream string) ([]object, error) {
	var out []object
	for i, doc := range splitDocs(stream) {
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if tm.Kind == "" && strings.TrimSpace(stripComments(doc)) == "" {
			continue // a document of comments only
		}
		obj, err := newObject(tm.APIVersion, tm.Kind)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, tm.Metadata.Name, err)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s %s: %w", tm.Kind, tm.Metadata.Name, err)
		}
		out = append(out, object{kind: tm.Kind, name: tm.Metadata.Name, obj: obj})
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func renderChart(t *testing.T, name, namespace string, overlays ...map[string]any) string {
	t.Helper()
	c, err := loadChart(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	v := c.values
	for _, o := range overlays {
		v = mergeValues(v, o)
	}
	out, err := c.render(name, namespace, v)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return out
}

func valuesFile(t *testing.T, path string) map[string]any {
	t.Helper()
	if path == "" {
		return nil
	}
	v, err := readValues(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRenderedManifestsInSync: deploy/k8s holds the chart rendered with
// its defaults and with values-cpu.yaml, object for object.
func TestRenderedManifestsInSync(t *testing.T) {
	for _, r := range rendered {
		t.Run(filepath.Base(r.file), func(t *testing.T) {
			want := renderChart(t, releaseName, releaseNamespace, valuesFile(t, r.values))
			if *update {
				extra := ""
				if r.values != "" {
					extra = ", -f deploy/" + r.values
				}
				hdr := fmt.Sprintf(renderedHeader, releaseName, releaseNamespace, extra, r.file)
				if err := os.WriteFile(r.file, []byte(hdr+want), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(r.file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(asObjects(t, want), asObjects(t, string(got))); diff != "" {
				t.Errorf("%s is stale; run go test ./deploy -run TestRenderedManifestsInSync -update (-chart +file):\n%s", r.file, diff)
			}
		})
	}
}

// asObjects decodes a stream into generic objects by kind and name, so
// formatting, order and comments do not matter.
func asObjects(t *testing.T, stream string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, doc := range splitDocs(stream) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if m == nil {
			continue
		}
		md, _ := m["metadata"].(map[string]any)
		out[fmt.Sprintf("%v/%v", m["kind"], md["name"])] = m
	}
	return out
}

// chartVariants are value sets the chart must render into a consistent
// stack, beyond the two committed ones.
var chartVariants = []struct {
	name, release, namespace string
	values                   string
	set                      map[string]any
	wantAPIKey               bool
	wantTag                  string // "" for the chart's appVersion
}{
	{name: "defaults-gpu", release: releaseName, namespace: releaseNamespace},
	{name: "cpu", release: releaseName, namespace: releaseNamespace, values: "helm/tandem/values-cpu.yaml"},
	{name: "dummy-fixed-replicas", release: "smoke", namespace: "default", set: map[string]any{
		"model":          map[string]any{"source": "dummy"},
		"engine":         map[string]any{"profile": "cpu", "replicas": 1},
		"frontend":       map[string]any{"replicas": 1, "autoscaling": map[string]any{"enabled": false}},
		"serviceMonitor": map[string]any{"enabled": false},
		"networkPolicy":  map[string]any{"enabled": false},
	}},
	{name: "pvc-apikey", release: "prod", namespace: "llm", wantAPIKey: true, wantTag: "1.2.3", set: map[string]any{
		"model":  map[string]any{"source": "pvc", "pvc": map[string]any{"claimName": "models"}, "servedModelName": "smollm2"},
		"apiKey": map[string]any{"value": "sk-test"},
		"image":  map[string]any{"tag": "1.2.3"},
	}},
	{name: "existing-secret", release: "tandem-blue", namespace: "serving", wantAPIKey: true, set: map[string]any{
		"apiKey": map[string]any{"existingSecret": "tandem-keys", "secretKey": "key"},
	}},
	{name: "curve-existing-secret", release: "tandem", namespace: "tandem", set: map[string]any{
		"curve": map[string]any{"existingSecret": "my-curve-keys", "generation": 3},
	}},
	{name: "insecure", release: "tandem", namespace: "tandem", set: map[string]any{"insecureEngineSocket": true}},
	// No engine /metrics: the frontends export every engine's series.
	{name: "frontends-export-engine-metrics", release: "tandem", namespace: "tandem", set: map[string]any{
		"engine": map[string]any{"metricsPort": 0},
	}},
	{name: "kv-events-llmd", release: "tandem", namespace: "tandem", set: map[string]any{
		"engine": map[string]any{"kvEvents": map[string]any{"replayPort": 5557, "layout": "array"}},
		"networkPolicy": map[string]any{"kvEventsFrom": []any{
			map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "llm-d-indexer"}}},
		}},
	}},
}

func TestChartVariants(t *testing.T) {
	env := loadEnv(t)
	for _, v := range chartVariants {
		t.Run(v.name, func(t *testing.T) {
			out := renderChart(t, v.release, v.namespace, valuesFile(t, v.values), v.set)
			objs, err := decodeStrict(out)
			if err != nil {
				t.Fatal(err)
			}
			s := newStack(t, objs, v.namespace)
			s.wantTag = v.wantTag
			env.check(t, s)
			if got := s.frontendAPIKeySecret() != ""; got != v.wantAPIKey {
				t.Errorf("frontend reads TANDEM_API_KEY from a Secret: %v, want %v", got, v.wantAPIKey)
			}
		})
	}
}

// TestCommittedManifests decodes deploy/k8s strictly and checks it.
func TestCommittedManifests(t *testing.T) {
	env := loadEnv(t)
	for _, r := range rendered {
		t.Run(filepath.Base(r.file), func(t *testing.T) {
			raw, err := os.ReadFile(r.file)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeStrict(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			env.check(t, newStack(t, objs, releaseNamespace))
		})
	}
}

func TestChartRejectsBadValues(t *testing.T) {
	c, err := loadChart(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		set     map[string]any
		wantErr string
	}{
		{"unknown profile", map[string]any{"engine": map[string]any{"profile": "tpu"}}, `engine.profile "tpu"`},
		{"unknown model source", map[string]any{"model": map[string]any{"source": "s3"}}, `model.source "s3"`},
		{"pvc without claim", map[string]any{"model": map[string]any{"source": "pvc"}}, "model.pvc.claimName is required"},
		{"insecure and keys", map[string]any{"insecureEngineSocket": true, "curve": map[string]any{"existingSecret": "k"}},
			"insecureEngineSocket: true contradicts curve.existingSecret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.render(releaseName, releaseNamespace, mergeValues(c.values, tt.set))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("render error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"misspelt field", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: e}\nspec: {replicass: 2}\n"},
		{"duplicate key", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIP: None, clusterIP: x}\n"},
		{"unknown kind", "apiVersion: v1\nkind: Servce\nmetadata: {name: s}\n"},
		{"wrong type", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: http}]}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeStrict(tt.doc); err == nil {
				t.Fatal("decoded without error")
			}
		})
	}
}

// TestRendererMatchesHelm compares the test renderer with `helm template`
// byte for byte when helm is installed (it is not needed otherwise).
func TestRendererMatchesHelm(t *testing.T) {
	helm, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("helm is not installed; the renderer is checked against it where it is")
	}
	for _, v := range chartVariants {
		t.Run(v.name, func(t *testing.T) {
			args := []string{"template", v.release, chartDir, "--namespace", v.namespace, "--kube-version", "1.30"}
			if v.values != "" {
				args = append(args, "-f", v.values)
			}
			if v.set != nil {
				b, err := yaml.Marshal(v.set)
				if err != nil {
					t.Fatal(err)
				}
				f := filepath.Join(t.TempDir(), "set.yaml")
				if err := os.WriteFile(f, b, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-f", f)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(helm, args...)
			cmd.Stderr = &stderr
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
			}
			got := renderChart(t, v.release, v.namespace, valuesFile(t, v.values), v.set)
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("renderer differs from helm (-helm +renderer):\n%s", diff)
			}
		})
	}
}
