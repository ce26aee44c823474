package metrics

// vLLM's histogram bucket families (vllm/v1/metrics/buckets.py, vLLM
// 0.33.0), so histogram_quantile over a Tandem scrape and a vLLM scrape
// reads the same boundaries.
var (
	// requestLatencyBuckets: e2e, queue, inference, prefill and decode time.
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	// ttftBuckets: time to first token.
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	// itlBuckets: inter-token latency and time per output token.
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	// iterationTokensBuckets: tokens per engine step.
	iterationTokensBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	paramsNBuckets         = []float64{1, 2, 5, 10, 20}
	numPreemptionsBuckets  = []float64{1, 2, 3, 4, 5, 10, 20}
)

// defaultMaxModelLen caps the token-count buckets when the model's length
// is not known.
const defaultMaxModelLen = 131072

// requestTokensBuckets is vLLM's 1-2-5 series capped at maxModelLen
// (build_1_2_5_buckets): prompt, generation, max_tokens and prefill-KV
// token counts.
func requestTokensBuckets(maxModelLen int) []float64 {
	if maxModelLen <= 0 {
		maxModelLen = defaultMaxModelLen
	}
	var out []float64
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p > maxModelLen {
				return out
			}
			out = append(out, float64(m*p))
		}
	}
}
