package metrics

import (
	"fmt"
	"strconv"
	"strings"
)

// hiddenSet says which of vLLM's deprecated names are shown.
//
//   - vllm:gpu_cache_usage_perc, vllm:gpu_prefix_cache_queries_total and
//     vllm:gpu_prefix_cache_hits_total: deprecated in vLLM 0.9.2 (renamed
//     kv_cache_usage_perc, prefix_cache_queries, prefix_cache_hits),
//     hidden in 0.11, removed in 0.12;
//   - vllm:time_per_output_token_seconds: deprecated in 0.11 (renamed
//     inter_token_latency_seconds), hidden in 0.12, removed in 0.13.
//
// A version V shows each name vLLM V could still export, on its own or
// through its --show-hidden-metrics-for-version: the gpu_ names for V ≤
// 0.11, time_per_output_token_seconds for V ≤ 0.12. production-stack's
// router and its dashboards read the gpu_ names.
type hiddenSet struct {
	gpu  bool // the gpu_ cache names
	tpot bool // vllm:time_per_output_token_seconds
}

// CheckHiddenVersion validates a --show-hidden-metrics-for-version value:
// "" or a vLLM version "X.Y" or "X.Y.Z".
func CheckHiddenVersion(v string) error {
	if v == "" {
		return nil
	}
	if _, _, ok := parseVersion(v); !ok {
		return fmt.Errorf("metrics: --show-hidden-metrics-for-version %q: want a vLLM version such as 0.11", v)
	}
	return nil
}

// ShowsGPUNames says whether version (a --show-hidden-metrics-for-version
// value) shows the deprecated gpu_ cache names, which an engine's own
// /metrics exports too.
func ShowsGPUNames(version string) bool { return hiddenFor(version).gpu }

func hiddenFor(v string) hiddenSet {
	major, minor, ok := parseVersion(v)
	if !ok {
		return hiddenSet{}
	}
	upTo := func(maxMinor int) bool { return major == 0 && minor <= maxMinor }
	return hiddenSet{gpu: upTo(11), tpot: upTo(12)}
}

func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return 0, 0, false
		}
		n[i] = x
	}
	return n[0], n[1], true
}
