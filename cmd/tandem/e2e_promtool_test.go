package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMetricsPassPromtool serves two engine cores with `tandem serve`,
// sends a request with a session, scrapes /metrics and runs the scrape
// through `promtool check metrics` (Debian package prometheus), as an
// operator's Prometheus would see it.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus: apt-get install prometheus)")
	}
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--data-parallel-size", "2", "--port", strconv.Itoa(port),
		"--max-model-len", "512", "--kv-cache-memory", "32Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)

	code, body := postJSON(t, base+"/v1/chat/completions", map[string]any{
		"model":      "dummy",
		"messages":   []map[string]string{{"role": "user", "content": "hello"}},
		"max_tokens": 4,
		"ignore_eos": true,
	}, map[string]string{"X-Session-ID": "promtool-1"})
	if code != http.StatusOK {
		t.Fatalf("chat: status %d, body %v", code, body)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, %v", resp.StatusCode, err)
	}
	// The scrape carries both engines and the request just served.
	for _, want := range []string{
		`tandem:engine_up{engine="0"`, `tandem:engine_up{engine="1"`,
		`vllm:request_success_total{finished_reason="length"`,
		`tandem:session_requests_total{`,
		"vllm:time_to_first_token_seconds_bucket{",
		`vllm:request_queue_time_seconds_bucket{engine="`,
		`vllm:iteration_tokens_total_bucket{engine="`,
		`vllm:cache_config_info{`,
	} {
		if !bytes.Contains(normalizeLabels(scrape), []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if problems := promtoolProblems(err, out); len(problems) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s\n--- scrape ---\n%s", err, strings.Join(problems, "\n"), scrape)
	}
}

// promtoolProblems returns what `promtool check metrics` reported, less
// the lints of names Tandem keeps as vLLM and llama-server publish them:
// "metric names should not contain ':'" (vLLM's names are vllm:…,
// llama-server's llamacpp:…, and Tandem's follow them as tandem:…, on
// purpose; see docs/metrics.md), the "_total" suffix of the two
// non-counters publishedTotals names, and llama-server's counter
// llamacpp:n_tokens_max without one. promtool exits 3
// for lint problems and 1 for a scrape it cannot parse; anything else is
// reported.
func promtoolProblems(err error, out []byte) []string {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		return []string{string(out)}
	}
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, text, _ := strings.Cut(line, " ")
		colonLint := text == "metric names should not contain ':'" &&
			(strings.HasPrefix(name, "vllm:") || strings.HasPrefix(name, "tandem:") || strings.HasPrefix(name, "llamacpp:"))
		totalLint := text == `non-counter metrics should not have "_total" suffix` && publishedTotals[name]
		// llama-server publishes its largest batch as a counter without _total.
		counterLint := text == `counter metrics should have "_total" suffix` && name == "llamacpp:n_tokens_max"
		if line != "" && !colonLint && !totalLint && !counterLint {
			problems = append(problems, line)
		}
	}
	return problems
}

// publishedTotals are non-counters whose published names end in _total:
// vLLM's histogram of tokens per engine step, and production-stack's
// router gauge its dashboard counts engines with.
var publishedTotals = map[string]bool{"vllm:iteration_tokens_total": true, "vllm:healthy_pods_total": true}

// normalizeLabels moves the finished_reason and engine labels first, in
// that order, so the checks above do not depend on label order.
func normalizeLabels(scrape []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(scrape), "\n") {
		name, labels, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			b.WriteString(line + "\n")
			continue
		}
		labels, rest, _ := strings.Cut(labels, "}")
		var reason, engine, others []string
		for _, l := range strings.Split(labels, ",") {
			switch {
			case strings.HasPrefix(l, "finished_reason="):
				reason = append(reason, l)
			case strings.HasPrefix(l, "engine="):
				engine = append(engine, l)
			default:
				others = append(others, l)
			}
		}
		fmt.Fprintf(&b, "%s{%s}%s\n", name, strings.Join(slices.Concat(reason, engine, others), ","), rest)
	}
	return b.Bytes()
}

func TestPromtoolProblems(t *testing.T) {
	exit := func(code int) error {
		return exec.Command("sh", "-c", "exit "+strconv.Itoa(code)).Run()
	}
	tests := []struct {
		name string
		err  error
		out  string
		want int // problems
	}{
		{"clean", nil, "", 0},
		{"colon lint on vllm names only", exit(3), "vllm:x_total metric names should not contain ':'\ntandem:y metric names should not contain ':'\n", 0},
		{"colon lint on another name", exit(3), "foo:bar metric names should not contain ':'\n", 1},
		{"other lint", exit(3), "vllm:x counter metrics should have \"_total\" suffix\n", 1},
		{"vLLM's _total histogram", exit(3), "vllm:iteration_tokens_total non-counter metrics should not have \"_total\" suffix\n", 0},
		{"another _total gauge", exit(3), "vllm:x_total non-counter metrics should not have \"_total\" suffix\n", 1},
		{"unparsable scrape", exit(1), "error while linting: text format parsing error\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promtoolProblems(tt.err, []byte(tt.out)); len(got) != tt.want {
				t.Errorf("problems = %q, want %d", got, tt.want)
			}
		})
	}
}
