package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// This file is a small Helm-compatible renderer: enough of `helm template`
// for deploy/helm/tandem. It follows Helm's engine where the chart relies
// on it: values decoded with sigs.k8s.io/yaml (numbers are float64), every
// template parsed into one set so `include` reaches the partials,
// missingkey=zero with "<no value>" removed, documents split on "---" and
// ordered by Helm's install order, each under a "# Source:" comment.
// A function the chart starts using that is not here fails the parse,
// which is the signal to add it (with Helm's semantics).

// chart is a chart directory read from disk.
type chart struct {
	dir       string
	meta      chartMeta
	values    map[string]any
	templates map[string]string // by path relative to the chart's parent, e.g. "tandem/templates/x.yaml"
}

// chartMeta is the part of Chart.yaml templates read (.Chart.Name, …).
type chartMeta struct {
	APIVersion  string   `json:"apiVersion"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Type        string   `json:"type"`
	Version     string   `json:"version"`
	AppVersion  string   `json:"appVersion"`
	KubeVersion string   `json:"kubeVersion"`
	Home        string   `json:"home"`
	Sources     []string `json:"sources"`
}

func loadChart(dir string) (*chart, error) {
	c := &chart{dir: dir, templates: map[string]string{}}
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(raw, &c.meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	if c.values, err = readValues(filepath.Join(dir, "values.yaml")); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "templates", "*"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c.templates[c.meta.Name+"/templates/"+filepath.Base(f)] = string(b)
	}
	return c, nil
}

func readValues(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v := map[string]any{}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// mergeValues returns base with over merged in: maps merge key by key,
// anything else in over replaces what base has (Helm's coalescing).
func mergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = mergeValues(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}

// release is .Release.
type release struct {
	Name      string
	Namespace string
	Service   string
	IsInstall bool
	IsUpgrade bool
	Revision  int
}

// render renders every template of c with values (already merged) and
// returns the manifest stream `helm template` prints.
func (c *chart) render(name, namespace string, values map[string]any) (string, error) {
	t := template.New("gotpl").Option("missingkey=zero")
	t.Funcs(funcMap(t))
	paths := make([]string, 0, len(c.templates))
	for p := range c.templates {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := t.New(p).Parse(c.templates[p]); err != nil {
			return "", err
		}
	}
	data := map[string]any{
		"Values":  values,
		"Release": release{Name: name, Namespace: namespace, Service: "Helm", IsInstall: true, Revision: 1},
		"Chart":   c.meta,
	}
	type doc struct {
		source, body string
		order        int
	}
	var docs []doc
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(base, ".txt") {
			continue
		}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, p, data); err != nil {
			return "", err
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		for _, d := range splitDocs(out) {
			docs = append(docs, doc{source: p, body: d, order: kindOrder(d)})
		}
	}
	// Helm prints the release's manifests, then its hooks, each part in
	// install order (releaseutil.SortManifests).
	sort.SliceStable(docs, func(i, j int) bool {
		hi, hj := hookRE.MatchString(docs[i].body), hookRE.MatchString(docs[j].body)
		if hi != hj {
			return hj
		}
		return docs[i].order < docs[j].order
	})
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", d.source, d.body)
	}
	return b.String(), nil
}

var docSep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

// splitDocs splits a YAML stream into its non-empty documents, trimmed
// (Helm's releaseutil.SplitManifests).
func splitDocs(s string) []string {
	var out []string
	for _, d := range docSep.Split(s, -1) {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// installOrder is Helm's kind order for install (releaseutil.InstallOrder).
var installOrder = []string{"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap",
	"StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
	"RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}

var (
	kindRE = regexp.MustCompile(`(?m)^kind:\s*(\S+)`)
	hookRE = regexp.MustCompile(`(?m)^\s+helm\.sh/hook:`)
)

func kindOrder(doc string) int {
	m := kindRE.FindStringSubmatch(doc)
	if m == nil {
		return len(installOrder)
	}
	for i, k := range installOrder {
		if k == m[1] {
			return i
		}
	}
	return len(installOrder)
}

// funcMap is the subset of Helm's and sprig's template functions the chart
// uses, with their semantics.
func funcMap(t *template.Template) template.FuncMap {
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var buf bytes.Buffer
			err := t.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
		"required": func(msg string, v any) (any, error) {
			if v == nil || v == "" {
				return nil, errors.New(msg)
			}
			return v, nil
		},
		"fail": func(msg string) (string, error) { return "", errors.New(msg) },
		"toYaml": func(v any) string {
			b, err := yaml.Marshal(v)
			if err != nil {
				return "" // Helm's toYaml swallows errors the same way
			}
			return strings.TrimSuffix(string(b), "\n")
		},
		"indent":  indent,
		"nindent": func(n int, s string) string { return "\n" + indent(n, s) },
		"quote": func(vs ...any) string {
			var out []string
			for _, v := range vs {
				if v != nil {
					out = append(out, fmt.Sprintf("%q", strval(v)))
				}
			}
			return strings.Join(out, " ")
		},
		"default": func(d any, given ...any) any {
			if len(given) == 0 || empty(given[0]) {
				return d
			}
			return given[0]
		},
		"trunc": func(n int, s string) string {
			if n >= 0 && len(s) > n {
				return s[:n]
			}
			return s
		},
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"contains":   func(substr, s string) bool { return strings.Contains(s, substr) },
		"dict": func(kv ...any) (map[string]any, error) {
			if len(kv)%2 != 0 {
				return nil, errors.New("dict: odd number of arguments")
			}
			m := map[string]any{}
			for i := 0; i < len(kv); i += 2 {
				m[strval(kv[i])] = kv[i+1]
			}
			return m, nil
		},
	}
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func strval(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprintf("%v", v)
	}
}

// empty is sprig's notion of an empty value (for default).
func empty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
