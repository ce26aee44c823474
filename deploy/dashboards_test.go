package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// publishedDashboard is a dashboard of vLLM's or production-stack's, as
// testdata/dashboards keeps it: where it comes from and each panel's
// title and queries, as published (their queries are facts).
type publishedDashboard struct {
	Source    map[string]string `json:"source"`
	Title     string            `json:"title"`
	Variables []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"variables"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
			Hide  bool   `json:"hide"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadPublished(t *testing.T) map[string]publishedDashboard {
	t.Helper()
	files, err := filepath.Glob("testdata/dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in testdata/dashboards: %v", err)
	}
	out := map[string]publishedDashboard{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d publishedDashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

// missingFeature excuses the panels that need something Tandem lacks, by
// dashboard file and panel title. Nothing else may be empty.
var missingFeature = map[string]map[string]string{
	"production-stack-vllm-dashboard.json": {
		// No exporter or recording rule of production-stack defines these
		// names; they are empty against vLLM too. Host usage is
		// node-exporter's and DCGM's to report, not a serving system's.
		"GPU Usage":    "node_gpu_usage_query: defined by no exporter",
		"CPU Usage":    "node_cpu_usage_query: defined by no exporter",
		"Memory Usage": "node_memory_usage_query: defined by no exporter",
		"Disk Usage":   "node_disk_usage_query: defined by no exporter",
	},
}

// grafanaVars are the values Grafana gives the dashboards' variables on
// this test's range and a 1 s scrape: $__interval at least the data
// source's scrape interval (3 s, so a rate over it has samples to work
// with), $__rate_interval four scrape intervals, $__range the window;
// the model variables name the served model.
func grafanaVars(window time.Duration) *strings.Replacer {
	return strings.NewReplacer(
		"$__rate_interval", "4s", "${__rate_interval}", "4s",
		"$__interval", "3s", "${__interval}", "3s",
		"$__range", window.Round(time.Second).String(), "${__range}", window.Round(time.Second).String(),
		"$model_name", "dummy", "${model_name}", "dummy",
		"$Deployment_id", "dummy", "${Deployment_id}", "dummy",
	)
}

// TestPublishedDashboardsShowData serves the dummy model with `tandem
// serve` (two engines, two frontends sharing the port, vLLM's deprecated
// names shown for 0.11 as a production-stack user would), sends traffic while a real Prometheus
// scrapes it every second, then evaluates every query of vLLM's three
// published Grafana dashboards and production-stack's, as Grafana would
// over the traffic's time range. Every query of every panel must return
// data, except the panels missingFeature excuses (which must not).
func TestPublishedDashboardsShowData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tandem serve and Prometheus")
	}
	dashboards := loadPublished(t)
	s, logs := startLiveStack(t, "--data-parallel-size", "2", "--api-server-count", "2", "--show-hidden-metrics-for-version", "0.11")
	start := time.Now()
	if err := s.traffic(context.Background(), 3, 12*time.Second); err != nil {
		t.Fatalf("traffic: %v\n%s", err, logs)
	}
	time.Sleep(3 * scrapeInterval) // the last requests' series scraped
	end := time.Now()
	vars := grafanaVars(end.Sub(start))

	// Two frontends, one scrape target: each engine's series once, and
	// counters that never go back (a scrape that reached the other
	// frontend would look like a reset if each exported only its share).
	for _, q := range []struct{ expr, want string }{
		{`count by (engine) (vllm:num_requests_running{model_name="dummy"})`, "1"},
		{`sum(resets(vllm:request_success_total{model_name="dummy"}[1h]))`, "0"},
	} {
		res, err := s.queryRange(q.expr, end, end, time.Second)
		if err != nil || len(res) == 0 {
			t.Errorf("%s: %v, %v", q.expr, res, err)
		}
		for _, r := range res {
			if len(r.Values) == 0 || fmt.Sprint(r.Values[0][1]) != q.want {
				t.Errorf("%s: %v %v, want %s", q.expr, r.Metric, r.Values, q.want)
			}
		}
	}
	models, err := s.labelValues("model_name")
	if err != nil || !slices.Contains(models, "dummy") {
		t.Errorf("label_values(model_name) = %v, %v: want dummy among them (the dashboards' model_name variable)", models, err)
	}
	for _, file := range keys(dashboards) {
		d := dashboards[file]
		var panels []livePanel
		for _, p := range d.Panels {
			lp := livePanel{title: p.Title}
			for _, tg := range p.Targets {
				if !tg.Hide {
					lp.exprs = append(lp.exprs, tg.Expr)
				}
			}
			panels = append(panels, lp)
		}
		t.Run(file, func(t *testing.T) { s.checkPanels(t, d.Title, panels, missingFeature[file], vars, start, end) })
	}
	var own []livePanel // Tandem's own dashboard, deploy/grafana/tandem.json
	for _, p := range loadDashboard(t).allPanels() {
		if p.Type == "row" {
			continue
		}
		lp := livePanel{title: p.Title}
		for _, tg := range p.Targets {
			lp.exprs = append(lp.exprs, tg.Expr)
		}
		own = append(own, lp)
	}
	t.Run("tandem.json", func(t *testing.T) { s.checkPanels(t, "Tandem", own, nil, vars, start, end) })
	if t.Failed() {
		t.Logf("tandem and Prometheus output:\n%s", logs)
	}
}

// TestPublishedDashboardsAreWellFormed: every panel has a title and a
// query, and every variable a query uses is one Grafana or the test sets.
func TestPublishedDashboardsAreWellFormed(t *testing.T) {
	vars := grafanaVars(time.Minute)
	for file, d := range loadPublished(t) {
		if d.Source["path"] == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: want a source path, a title and panels", file)
		}
		for _, p := range d.Panels {
			if p.Title == "" || len(p.Targets) == 0 {
				t.Errorf("%s: panel %d: want a title and a query", file, p.ID)
			}
			for _, tg := range p.Targets {
				if e := vars.Replace(tg.Expr); strings.Contains(e, "$") {
					t.Errorf("%s: panel %q: %s keeps a variable the test does not set", file, p.Title, e)
				}
			}
		}
	}
}

// livePanel is a panel's title and the queries Grafana runs for it.
type livePanel struct {
	title string
	exprs []string
}

// checkPanels evaluates every query of panels over [start, end] as
// Grafana would (a range query, one step a second) and fails on each
// query without data, unless excused names its panel; an excused panel
// must be empty.
func (s *liveStack) checkPanels(t *testing.T, title string, panels []livePanel, excused map[string]string, vars *strings.Replacer, start, end time.Time) {
	numShown := 0
	for _, p := range panels {
		var empty []string
		for _, e := range p.exprs {
			expr := vars.Replace(e)
			res, err := s.queryRange(expr, start, end, time.Second)
			if err != nil {
				t.Errorf("panel %q: %v", p.title, err)
				continue
			}
			if !hasData(res) {
				empty = append(empty, expr)
			}
		}
		why, isExcused := excused[p.title]
		switch {
		case isExcused && len(empty) < len(p.exprs):
			t.Errorf("panel %q shows data, yet is excused (%s): drop the excuse", p.title, why)
		case isExcused:
			t.Logf("panel %q is empty: %s", p.title, why)
		case len(empty) > 0:
			t.Errorf("panel %q has queries without data:\n  %s", p.title, strings.Join(empty, "\n  "))
		default:
			numShown++
		}
	}
	t.Logf("%s: %d of %d panels show data, %d excused", title, numShown, len(panels), len(excused))
}
