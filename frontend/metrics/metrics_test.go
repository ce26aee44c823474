package metrics

import (
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
)

func TestRequestTokensBuckets(t *testing.T) {
	tests := []struct {
		maxModelLen int
		want        []float64
	}{
		{100, []float64{1, 2, 5, 10, 20, 50, 100}}, // vLLM's build_1_2_5_buckets docstring
		{2048, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}},
		{1, []float64{1}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, requestTokensBuckets(tt.maxModelLen)); diff != "" {
			t.Errorf("requestTokensBuckets(%d) (-want +got):\n%s", tt.maxModelLen, diff)
		}
	}
	if got := requestTokensBuckets(0); got[len(got)-1] != 100000 {
		t.Errorf("unknown max_model_len: last bucket %v, want 100000 (capped at %d)", got[len(got)-1], defaultMaxModelLen)
	}
}

func TestHiddenFor(t *testing.T) {
	tests := []struct {
		version string
		want    hiddenSet
	}{
		{"", hiddenSet{}},
		{"0.10", hiddenSet{gpu: true, tpot: true}},
		{"0.11", hiddenSet{gpu: true, tpot: true}},
		{"0.11.2", hiddenSet{gpu: true, tpot: true}},
		{"0.12", hiddenSet{tpot: true}},
		{"0.13", hiddenSet{}},
		{"1.0", hiddenSet{}},
		{"junk", hiddenSet{}},
	}
	for _, tt := range tests {
		if got := hiddenFor(tt.version); got != tt.want {
			t.Errorf("hiddenFor(%q) = %+v, want %+v", tt.version, got, tt.want)
		}
	}
	for _, bad := range []string{"x", "0", "0.a", "1.2.3.4", "-1.2"} {
		if CheckHiddenVersion(bad) == nil {
			t.Errorf("CheckHiddenVersion(%q) = nil, want an error", bad)
		}
	}
	for _, good := range []string{"", "0.11", "v0.10.1"} {
		if err := CheckHiddenVersion(good); err != nil {
			t.Errorf("CheckHiddenVersion(%q) = %v", good, err)
		}
	}
}

func TestQPSWindow(t *testing.T) {
	w := newQPSWindow(10)
	t0 := time.Unix(1000, 0)
	for i := range 20 {
		w.add(1, t0.Add(time.Duration(i)*time.Second))
	}
	if got := w.rate(1, t0.Add(19*time.Second)); got != 1 {
		t.Errorf("rate over the last 10 s of 1/s: %v, want 1", got)
	}
	if got := w.rate(1, t0.Add(40*time.Second)); got != 0 {
		t.Errorf("rate long after: %v, want 0", got)
	}
	if got := w.rate(2, t0); got != 0 {
		t.Errorf("rate of an engine with no requests: %v", got)
	}
}

func twoEngines() []engineclient.EngineState {
	return []engineclient.EngineState{
		{Index: 0, Endpoint: "tcp://e0:5555", Ready: true, Info: wire.Ready{BlockSize: 16, NumBlocks: 100},
			Stats: wire.SchedulerStats{NumRunningReqs: 2, NumWaitingReqs: 1, KVCacheUsage: 0.5, PrefixCacheQueries: 100, PrefixCacheHits: 25}},
		{Index: 1, Endpoint: "tcp://e1:5555", Stats: wire.SchedulerStats{NumWaitingReqs: 3, NumSkippedWaitingReqs: 2}},
	}
}

func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// series returns each series of family name as its labels (sorted
// name=value pairs) and its value (a histogram's count).
func series(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		slices.Sort(ls)
		v := 0.0
		switch {
		case m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Summary != nil:
			v = float64(m.Summary.GetSampleCount())
		}
		out[strings.Join(ls, ",")] = v
	}
	return out
}

// TestRequestSeries: a finished request lands in vLLM's histograms under
// the engine that served it, with its phase times from the engine's
// events.
func TestRequestSeries(t *testing.T) {
	m := New(Config{ModelName: "m", MaxModelLen: 512, Engines: twoEngines})
	m.ObserveFirstToken(1, 20*time.Millisecond, 100, 32)
	m.ObserveTokens(1, 1)
	m.ObserveInterToken(1, 10*time.Millisecond)
	m.ObserveTokens(1, 3)
	m.ObserveIteration(1, 69)
	m.ObserveFinish(Finished{Engine: 1, Reason: "length", E2E: 2 * time.Second, NumPrompt: 100, NumGenerated: 4, NumCached: 32, MaxTokens: 4,
		Timing: engineclient.Timing{Queued: 10, Scheduled: 10.5, FirstToken: 11, LastToken: 13, NumGenerated: 4}})
	m.ObserveParent(1, 1, 4)
	fams := scrape(t, m)

	tests := []struct {
		name string
		want map[string]float64
	}{
		{"vllm:request_success_total", map[string]float64{
			"engine=0,finished_reason=abort,model_name=m": 0, "engine=0,finished_reason=error,model_name=m": 0,
			"engine=0,finished_reason=length,model_name=m": 0, "engine=0,finished_reason=repetition,model_name=m": 0,
			"engine=0,finished_reason=stop,model_name=m":  0,
			"engine=1,finished_reason=abort,model_name=m": 0, "engine=1,finished_reason=error,model_name=m": 0,
			"engine=1,finished_reason=length,model_name=m": 1, "engine=1,finished_reason=repetition,model_name=m": 0,
			"engine=1,finished_reason=stop,model_name=m": 0,
		}},
		{"vllm:prompt_tokens_total", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 100}},
		{"vllm:prompt_tokens_cached_total", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 32}},
		{"vllm:prompt_tokens_by_source_total", map[string]float64{
			"engine=0,model_name=m,source=external_kv_transfer": 0, "engine=0,model_name=m,source=local_cache_hit": 0, "engine=0,model_name=m,source=local_compute": 0,
			"engine=1,model_name=m,source=external_kv_transfer": 0, "engine=1,model_name=m,source=local_cache_hit": 32, "engine=1,model_name=m,source=local_compute": 68,
		}},
		{"vllm:generation_tokens_total", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 4}},
		{"vllm:request_queue_time_seconds", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 1}},
		{"vllm:iteration_tokens_total", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 1}},
		{"vllm:num_requests_waiting_by_reason", map[string]float64{
			"engine=0,model_name=m,reason=capacity": 1, "engine=0,model_name=m,reason=deferred": 0,
			"engine=1,model_name=m,reason=capacity": 1, "engine=1,model_name=m,reason=deferred": 2, // 2 compiling a grammar
		}},
		{"vllm:cache_config_info", map[string]float64{"block_size=16,cache_dtype=auto,engine=0,kv_cache_size_tokens=1600,model_name=m,num_gpu_blocks=100": 1}},
		{"vllm:healthy_pods_total", map[string]float64{"server=tcp://e0:5555": 1, "server=tcp://e1:5555": 0}},
		{"vllm:gpu_prefix_cache_hit_rate", map[string]float64{"server=tcp://e0:5555": 0.25, "server=tcp://e1:5555": 0}},
		{"vllm:gpu_cache_usage_perc", nil}, // hidden
		{"vllm:time_per_output_token_seconds", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, series(fams, tt.name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}

	// The phase times, from the engine's clock: queue 0.5 s, prefill
	// 0.5 s, decode 2 s, inference 2.5 s, time per output token 2/3 s.
	sums := map[string]float64{
		"vllm:request_queue_time_seconds": 0.5, "vllm:request_prefill_time_seconds": 0.5, "vllm:request_decode_time_seconds": 2,
		"vllm:request_inference_time_seconds": 2.5, "vllm:request_time_per_output_token_seconds": 2.0 / 3,
		"vllm:e2e_request_latency_seconds": 2, "vllm:request_prefill_kv_computed_tokens": 68, "vllm:request_params_max_tokens": 4,
		"vllm:request_max_num_generation_tokens": 4, "vllm:request_params_n": 1, "vllm:time_to_first_token_seconds": 0.02,
	}
	for name, want := range sums {
		var got float64
		for _, s := range fams[name].GetMetric() {
			got += s.GetHistogram().GetSampleSum()
		}
		if d := got - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s sum %v, want %v", name, got, want)
		}
	}
}

// TestBuckets: the histograms have vLLM's boundaries (+Inf is implied).
func TestBuckets(t *testing.T) {
	m := New(Config{ModelName: "m", MaxModelLen: 100, Engines: twoEngines})
	fams := scrape(t, m)
	tests := []struct {
		name string
		want []float64
	}{
		{"vllm:e2e_request_latency_seconds", requestLatencyBuckets},
		{"vllm:request_queue_time_seconds", requestLatencyBuckets},
		{"vllm:time_to_first_token_seconds", ttftBuckets},
		{"vllm:inter_token_latency_seconds", itlBuckets},
		{"vllm:request_time_per_output_token_seconds", itlBuckets},
		{"vllm:iteration_tokens_total", iterationTokensBuckets},
		{"vllm:request_params_n", paramsNBuckets},
		{"vllm:request_prompt_tokens", []float64{1, 2, 5, 10, 20, 50, 100}},
		{"http_request_duration_seconds", nil}, // no series before a request
	}
	for _, tt := range tests {
		var got []float64
		if f := fams[tt.name]; f != nil && len(f.Metric) > 0 {
			for _, b := range f.Metric[0].GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) { // the parser adds +Inf
					got = append(got, b.GetUpperBound())
				}
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s buckets (-want +got):\n%s", tt.name, diff)
		}
	}
	if got := requestLatencyBuckets[len(requestLatencyBuckets)-1]; got != 7680 {
		t.Errorf("e2e's last bucket %v, want vLLM's 7680", got)
	}
}

// TestHiddenMetrics: --show-hidden-metrics-for-version 0.11 brings back
// the deprecated names with the values of their successors.
func TestHiddenMetrics(t *testing.T) {
	m := New(Config{ModelName: "m", ShowHiddenMetricsForVersion: "0.11", Engines: twoEngines})
	m.ObserveInterToken(0, 30*time.Millisecond)
	fams := scrape(t, m)
	tests := []struct {
		name string
		want map[string]float64
	}{
		{"vllm:gpu_cache_usage_perc", map[string]float64{"engine=0,model_name=m": 0.5, "engine=1,model_name=m": 0}},
		{"vllm:gpu_prefix_cache_queries_total", map[string]float64{"engine=0,model_name=m": 100, "engine=1,model_name=m": 0}},
		{"vllm:gpu_prefix_cache_hits_total", map[string]float64{"engine=0,model_name=m": 25, "engine=1,model_name=m": 0}},
		{"vllm:time_per_output_token_seconds", map[string]float64{"engine=0,model_name=m": 1, "engine=1,model_name=m": 0}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, series(fams, tt.name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestHTTPSeries: the instrumentator's names and labels; excluded paths
// are not counted.
func TestHTTPSeries(t *testing.T) {
	m := New(Config{ModelName: "m"})
	m.ObserveHTTP("POST", "/v1/chat/completions", 200, 300*time.Millisecond, 120, 0)
	m.ObserveHTTP("POST", "/v1/chat/completions", 400, time.Millisecond, 10, 50)
	m.ObserveHTTP("GET", "", 404, time.Millisecond, -1, 20)
	m.ObserveHTTP("GET", "/health", 200, time.Millisecond, -1, 0)
	fams := scrape(t, m)
	want := map[string]float64{
		"handler=/v1/chat/completions,method=POST,status=2xx": 1,
		"handler=/v1/chat/completions,method=POST,status=4xx": 1,
		"handler=none,method=GET,status=4xx":                  1,
	}
	if diff := cmp.Diff(want, series(fams, "http_requests_total")); diff != "" {
		t.Errorf("http_requests_total (-want +got):\n%s", diff)
	}
	wantDur := map[string]float64{"handler=/v1/chat/completions,method=POST": 2, "handler=none,method=GET": 1}
	if diff := cmp.Diff(wantDur, series(fams, "http_request_duration_seconds")); diff != "" {
		t.Errorf("http_request_duration_seconds (-want +got):\n%s", diff)
	}
	if got := series(fams, "http_request_duration_highr_seconds")[""]; got != 3 {
		t.Errorf("http_request_duration_highr_seconds count %v, want 3", got)
	}
}

// TestPeersAddUp: with two frontends of one serve, a scrape of either
// counts both frontends' requests once (their own series summed, as
// vLLM's API servers do in Prometheus multiprocess mode) and each
// engine's series once, with its own numbers; a peer that is gone is left
// out.
func TestPeersAddUp(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "peer.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	peer := New(Config{ModelName: "m", MaxModelLen: 512, Engines: twoEngines})
	srv := httptest.NewUnstartedServer(peer.OwnHandler())
	srv.Listener = ln
	srv.Start()
	m := New(Config{ModelName: "m", MaxModelLen: 512, Engines: twoEngines, Peers: []string{sock}})

	for _, x := range []*Metrics{m, peer, peer} {
		x.ObserveRouted(1)
		x.ObserveFirstToken(1, 20*time.Millisecond, 100, 32)
		x.ObserveFinish(Finished{Engine: 1, Reason: "stop", E2E: time.Second, NumPrompt: 100, NumGenerated: 4, NumCached: 32, MaxTokens: 4})
		x.ObserveHTTP("POST", "/v1/completions", 200, time.Second, 10, 10)
	}
	fams := scrape(t, m)
	tests := []struct {
		name string
		want map[string]float64
	}{
		{"vllm:prompt_tokens_total", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 300}},
		{"vllm:e2e_request_latency_seconds", map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 3}},
		{"http_requests_total", map[string]float64{"handler=/v1/completions,method=POST,status=2xx": 3}},
		{"http_request_size_bytes", map[string]float64{"handler=/v1/completions": 3}},
		{"vllm:current_qps", map[string]float64{"server=tcp://e0:5555": 0, "server=tcp://e1:5555": 3.0 / qpsWindowSeconds}},
		// Engine series: each engine's own numbers, not one per frontend.
		{"vllm:num_requests_running", map[string]float64{"engine=0,model_name=m": 2, "engine=1,model_name=m": 0}},
		{"vllm:prefix_cache_queries_total", map[string]float64{"engine=0,model_name=m": 100, "engine=1,model_name=m": 0}},
		{"vllm:healthy_pods_total", map[string]float64{"server=tcp://e0:5555": 1, "server=tcp://e1:5555": 0}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, series(fams, tt.name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	var buckets []uint64
	for _, s := range fams["vllm:e2e_request_latency_seconds"].GetMetric() {
		if s.GetHistogram().GetSampleCount() > 0 {
			for _, b := range s.GetHistogram().GetBucket() {
				buckets = append(buckets, b.GetCumulativeCount())
			}
		}
	}
	if want := []uint64{0, 0, 0, 3}; len(buckets) < 4 || !slices.Equal(buckets[:4], want) {
		t.Errorf("e2e buckets 0.3, 0.5, 0.8, 1: %v, want %v", buckets, want)
	}
	if n := len(fams["go_goroutines"].GetMetric()); n != 1 {
		t.Errorf("go_goroutines: %d series, want this process's only", n)
	}

	srv.Close()
	fams = scrape(t, m)
	if diff := cmp.Diff(map[string]float64{"engine=0,model_name=m": 0, "engine=1,model_name=m": 100}, series(fams, "vllm:prompt_tokens_total")); diff != "" {
		t.Errorf("with the peer gone, vllm:prompt_tokens_total (-want +got):\n%s", diff)
	}
}

// TestNoEngineSeries: with NoEngineSeries the engines' own series are
// gone and this frontend's (requests, router) stay.
func TestNoEngineSeries(t *testing.T) {
	engineOwned := []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:num_requests_waiting_by_reason",
		"vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
		"vllm:prompt_tokens_cached_by_source_total", "vllm:num_preemptions_total", "vllm:cache_config_info",
		"vllm:engine_sleep_state", "vllm:gpu_cache_usage_perc", "tandem:kv_cache_free_blocks", "tandem:engine_up",
		"tandem:sessions_resident"}
	frontendOwned := []string{"vllm:time_to_first_token_seconds", "vllm:request_success_total", "vllm:iteration_tokens_total",
		"vllm:healthy_pods_total", "vllm:current_qps", "vllm:time_per_output_token_seconds"}
	for _, off := range []bool{false, true} {
		m := New(Config{ModelName: "m", ShowHiddenMetricsForVersion: "0.11", Engines: twoEngines, NoEngineSeries: off})
		fams := scrape(t, m)
		for _, name := range engineOwned {
			if got := fams[name] != nil; got == off {
				t.Errorf("NoEngineSeries %v: %s exported %v", off, name, got)
			}
		}
		for _, name := range frontendOwned {
			if fams[name] == nil {
				t.Errorf("NoEngineSeries %v: no %s", off, name)
			}
		}
	}
}

// TestLlamaSeries: llama-server's llamacpp: series, without labels, from
// the same observations as vLLM's, and its Process-Start-Time-Unix header.
func TestLlamaSeries(t *testing.T) {
	m := New(Config{ModelName: "m", MaxModelLen: 512, Engines: twoEngines})
	m.ObserveIteration(1, 69)
	m.ObserveIteration(1, 3)
	m.ObserveFinish(Finished{Engine: 1, Reason: "length", NumPrompt: 100, NumGenerated: 4, NumCached: 32,
		Timing: engineclient.Timing{Queued: 10, Scheduled: 10.5, FirstToken: 11, LastToken: 13, NumGenerated: 4}})
	m.ObserveFinish(Finished{Engine: 0, Reason: "stop", NumPrompt: 10, NumGenerated: 2}) // no engine timing
	fams := scrape(t, m)
	want := map[string]float64{
		"llamacpp:prompt_tokens_total": 68 + 10, "llamacpp:prompt_tokens_cached_total": 32, "llamacpp:prompt_seconds_total": 0.5,
		"llamacpp:tokens_predicted_total": 6, "llamacpp:tokens_predicted_seconds_total": 2, "llamacpp:n_decode_total": 2,
		"llamacpp:n_tokens_max": 69, "llamacpp:spec_decode_num_drafts_total": 0,
		"llamacpp:prompt_tokens_seconds": 78 / 0.5, "llamacpp:predicted_tokens_seconds": 3, "llamacpp:n_busy_slots_per_decode": 36,
		"llamacpp:requests_processing": 2, "llamacpp:requests_deferred": 4,
	}
	for name, v := range want {
		if got := series(fams, name); !cmp.Equal(got, map[string]float64{"": v}) {
			t.Errorf("%s = %v, want %v without labels", name, got, v)
		}
	}
	// The throughput gauges report what finished since the last scrape,
	// as llama-server's buckets: the scrape above emptied them.
	fams = scrape(t, m)
	for _, name := range []string{"llamacpp:prompt_tokens_seconds", "llamacpp:predicted_tokens_seconds"} {
		if got := series(fams, name); !cmp.Equal(got, map[string]float64{"": 0}) {
			t.Errorf("second scrape: %s = %v, want 0", name, got)
		}
	}
	if got := series(fams, "llamacpp:tokens_predicted_total"); !cmp.Equal(got, map[string]float64{"": 6}) {
		t.Errorf("second scrape: tokens_predicted_total = %v, want 6 still", got)
	}
	m.ObserveFinish(Finished{Engine: 1, Reason: "length", NumPrompt: 10, NumGenerated: 8,
		Timing: engineclient.Timing{Queued: 20, Scheduled: 20, FirstToken: 21, LastToken: 25, NumGenerated: 8}})
	if got := series(scrape(t, m), "llamacpp:predicted_tokens_seconds"); !cmp.Equal(got, map[string]float64{"": 2}) {
		t.Errorf("after one more request: predicted_tokens_seconds = %v, want 8/4", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Header().Get("Process-Start-Time-Unix") == "" {
		t.Error("no Process-Start-Time-Unix header")
	}
}
