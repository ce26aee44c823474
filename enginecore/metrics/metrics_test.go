package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

func TestSeriesFromStats(t *testing.T) {
	st := wire.SchedulerStats{NumRunningReqs: 3, NumWaitingReqs: 5, NumSkippedWaitingReqs: 2, KVCacheUsage: 0.25,
		NumFreeBlocks: 75, NumTotalBlocks: 100, PrefixCacheQueries: 640, PrefixCacheHits: 320, NumPreemptions: 4, NumSessions: 7}
	tests := []struct {
		name     string
		gpuNames bool
		want     string // exposition lines that must be there
		absent   string // a name that must not be
	}{
		{name: "default", want: `vllm:num_requests_running{engine="2",model_name="m"} 3
vllm:num_requests_waiting{engine="2",model_name="m"} 5
vllm:num_requests_waiting_by_reason{engine="2",model_name="m",reason="capacity"} 3
vllm:num_requests_waiting_by_reason{engine="2",model_name="m",reason="deferred"} 2
vllm:kv_cache_usage_perc{engine="2",model_name="m"} 0.25
vllm:prefix_cache_queries_total{engine="2",model_name="m"} 640
vllm:prefix_cache_hits_total{engine="2",model_name="m"} 320
vllm:prompt_tokens_cached_by_source_total{engine="2",model_name="m",source="device"} 320
vllm:prompt_tokens_cached_by_source_total{engine="2",model_name="m",source="host"} 0
vllm:num_preemptions_total{engine="2",model_name="m"} 4
vllm:engine_sleep_state{engine="2",model_name="m",sleep_state="awake"} 1
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="2",kv_cache_size_tokens="1600",model_name="m",num_gpu_blocks="100"} 1
tandem:kv_cache_free_blocks{engine="2",model_name="m"} 75
tandem:sessions_resident{engine="2",model_name="m"} 7
tandem:engine_up{engine="2",model_name="m"} 1`, absent: "vllm:gpu_cache_usage_perc"},
		{name: "gpu names", gpuNames: true, want: `vllm:gpu_cache_usage_perc{engine="2",model_name="m"} 0.25
vllm:gpu_prefix_cache_queries_total{engine="2",model_name="m"} 640
vllm:gpu_prefix_cache_hits_total{engine="2",model_name="m"} 320`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Config{ModelName: "m", Engine: 2, BlockSize: 16, NumBlocks: 100, GPUNames: tt.gpuNames,
				Stats: func() wire.SchedulerStats { return st }})
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body := rec.Body.String()
			for _, line := range strings.Split(tt.want, "\n") {
				if !strings.Contains(body, line+"\n") {
					t.Errorf("no %q in:\n%s", line, body)
				}
			}
			if tt.absent != "" && strings.Contains(body, tt.absent) {
				t.Errorf("%s exported", tt.absent)
			}
			if !strings.Contains(body, "process_") && !strings.Contains(body, "go_goroutines") {
				t.Error("no go_ or process_ series")
			}
		})
	}
}
