package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's sleep-mode operation series (vllm/entrypoints/serve/dev/sleep):
// the duration of each sleep, wake and release_kv_cache_memory call and
// how many are awaited now, by operation; a label appears with its first
// call.
type sleepMetrics struct {
	duration *prometheus.HistogramVec // seconds
	inFlight *prometheus.GaugeVec
}

var sleepBuckets = []float64{0.01, 0.1, 1, 10, 30, 60, 120, 300, 600}

func newSleepMetrics(reg prometheus.Registerer) *sleepMetrics {
	s := &sleepMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:sleep_mode_operation_duration_seconds",
			Help: "Duration of one sleep-mode operation.", Buckets: sleepBuckets}, []string{"operation"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:sleep_mode_operations_in_flight",
			Help: "Sleep-mode operations currently awaited."}, []string{"operation"}),
	}
	reg.MustRegister(s.duration, s.inFlight)
	return s
}

// SleepOperation records one sleep-mode operation (sleep, wake or
// release_kv_cache_memory) from now until done is called.
func (m *Metrics) SleepOperation(op string) (done func()) {
	g := m.sleep.inFlight.WithLabelValues(op)
	g.Inc()
	start := time.Now()
	return func() {
		g.Dec()
		m.sleep.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	}
}
