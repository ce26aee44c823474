package deploy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/wire"
)

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

const dashboardFile = "grafana/tandem.json"

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// queries returns every PromQL expression: panel targets and the
// label_values(metric, label) of query variables.
func (d dashboard) queries() []string {
	var out []string
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			out = append(out, v.Definition)
		}
	}
	return out
}

var panelTypes = map[string]bool{"row": true, "timeseries": true, "stat": true, "heatmap": true, "gauge": true, "bargauge": true, "table": true, "text": true}

// grafanaGlobals are the variables Grafana itself defines.
var grafanaGlobals = map[string]bool{"__rate_interval": true, "__interval": true, "__range": true, "__interval_ms": true, "__range_s": true}

var varRef = regexp.MustCompile(`\$\{?(\w+)`)

// TestDashboardIsValid checks the structure Grafana needs to load the
// dashboard: ids, grid, panel types, data sources, targets, variables.
func TestDashboardIsValid(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.UID) > 40 {
		t.Errorf("title %q, uid %q: both required, uid at most 40 characters", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want ≥ 36 (Grafana 9+)", d.SchemaVersion)
	}
	vars := map[string]string{} // name → type
	for _, v := range d.Templating.List {
		if _, dup := vars[v.Name]; dup || v.Name == "" {
			t.Errorf("template variable %q empty or defined twice", v.Name)
		}
		vars[v.Name] = v.Type
	}
	ids := map[int]bool{}
	numQueries := 0
	for _, p := range d.allPanels() {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or not unique", p.Title, p.ID)
		}
		ids[p.ID] = true
		if !panelTypes[p.Type] {
			t.Errorf("panel %q: unknown type %q", p.Title, p.Type)
		}
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d: want a title and at least one target", p.ID)
		}
		checkDatasource(t, p.Title, p.Datasource, vars)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			numQueries++
			if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %q needs a unique refId and an expr", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil {
				checkDatasource(t, p.Title, tg.Datasource, vars)
			}
			for _, m := range varRef.FindAllStringSubmatch(tg.Expr, -1) {
				if _, ok := vars[m[1]]; !ok && !grafanaGlobals[m[1]] {
					t.Errorf("panel %q: %s uses $%s, which is not defined", p.Title, tg.Expr, m[1])
				}
			}
		}
	}
	if numQueries < 10 {
		t.Errorf("only %d queries", numQueries)
	}
}

func checkDatasource(t *testing.T, title string, ds *datasource, vars map[string]string) {
	t.Helper()
	if ds == nil || ds.Type != "prometheus" {
		t.Errorf("panel %q: datasource %+v, want type prometheus", title, ds)
		return
	}
	if name := strings.Trim(ds.UID, "${}"); strings.HasPrefix(ds.UID, "$") && vars[name] != "datasource" {
		t.Errorf("panel %q: datasource uid %q is not a datasource variable", title, ds.UID)
	}
}

// exportedMetrics returns the names a frontend's /metrics can serve: every
// family frontend/metrics registers, with every labelled series observed
// once and one engine reporting.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	engines := func() []engineclient.EngineState {
		return []engineclient.EngineState{{Index: 0, Ready: true, Info: wire.Ready{BlockSize: 16, NumBlocks: 8}, Stats: wire.SchedulerStats{NumRunningReqs: 1}}}
	}
	m := metrics.New(metrics.Config{ModelName: "m", ShowHiddenMetricsForVersion: "0.11", Engines: engines})
	m.ObserveFirstToken(0, 0, 1, 0)
	m.ObserveInterToken(0, 0)
	m.ObserveFinish(metrics.Finished{Reason: "stop", NumPrompt: 1, NumGenerated: 1})
	m.ObserveSession("header", 1, 1)
	m.ObserveRouting("session", "hit")
	m.ObserveHTTP("POST", "/v1/completions", 200, 0, 0, 0)
	fams, err := scrapeFamilies(m)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

var (
	// promqlStrings are string literals ("…", '…', `…`).
	promqlStrings = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// promqlGroupings are label lists: by (…), without (…), on (…), …
	promqlGroupings = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promqlKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "Inf": true, "NaN": true}
)

// metricNames extracts the metric names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges, grouping clauses
// and function calls are removed. label_values(metric, label) yields the
// metric.
func metricNames(expr string) []string {
	if inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		first, _, _ := strings.Cut(inner, ",")
		expr = strings.TrimSuffix(first, ")")
	}
	s := promqlStrings.ReplaceAllString(expr, " ")
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRanges.ReplaceAllString(s, " ")
	s = promqlGroupings.ReplaceAllString(s, " ")
	s = varRef.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || promqlKeywords[name] {
			continue // a function or an aggregation, or a keyword
		}
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent of a number like 1e3
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`rate(foo_total{a="b",c=~"x|y"}[5m])`, []string{"foo_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(vllm:ttft_bucket{model_name=~"$model_name"}[$__rate_interval])))`, []string{"vllm:ttft_bucket"}},
		{`max by (engine) (rate(a_total[1m])) / max by (engine) (rate(b_total[1m]))`, []string{"a_total", "b_total"}},
		{`sum(x) without (instance) > bool 2^30 and on (engine) y offset 5m`, []string{"x", "y"}},
		{`changes(tandem:engine_up{m="}"}[$__range])`, []string{"tandem:engine_up"}},
		{`label_values(tandem:engine_up, model_name)`, []string{"tandem:engine_up"}},
		{`1e3 * up`, []string{"up"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, metricNames(tt.expr)); diff != "" {
				t.Errorf("metricNames (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDashboardNamesOnlyExportedMetrics: every metric a dashboard query
// selects is registered by frontend/metrics (histogram series by their
// _bucket, _sum and _count), and the dashboard covers what operators
// watch.
func TestDashboardNamesOnlyExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	used := map[string]bool{}
	for _, q := range loadDashboard(t).queries() {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("query %q selects no metric", q)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] && !exported[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] {
				t.Errorf("query %q names %s, which Tandem does not export", q, n)
			}
		}
	}
	for _, n := range []string{
		"vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
		"vllm:generation_tokens_total", "vllm:kv_cache_usage_perc", "vllm:prefix_cache_hits_total",
		"tandem:session_prefix_cache_hits_total", "tandem:routing_decisions_total", "tandem:engine_up",
	} {
		if !used[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

// TestMetricsDocumented: docs/metrics.md names every vllm: and tandem:
// metric a frontend exports.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range exportedMetrics(t) {
		if (strings.HasPrefix(name, "vllm:") || strings.HasPrefix(name, "tandem:")) && !bytes.Contains(doc, []byte(name)) {
			t.Errorf("docs/metrics.md does not document %s", name)
		}
	}
}

// scrapeFamilies scrapes the metrics handler as Prometheus would and
// returns the family names it serves.
func scrapeFamilies(m *metrics.Metrics) (map[string]bool, error) {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name := range fams {
		out[name] = true
	}
	return out, nil
}
