package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's vllm:lora_requests_info: one series whose labels name the LoRA
// adapters of the requests running and waiting now (comma-separated) and
// the adapters an engine keeps loaded (max_lora), and whose value is when
// those last changed, Unix seconds. The Gateway API Inference Extension's
// endpoint picker (llm-d's) reads it for LoRA affinity: it takes the
// series with the largest value and splits the lists on commas.
type loraInfo struct {
	mu               sync.Mutex
	max              int
	running, waiting map[string]int // adapter name → requests
	changed          float64        // Unix seconds
	desc             *prometheus.Desc
}

func newLoRAInfo(max int) *loraInfo {
	return &loraInfo{max: max, running: map[string]int{}, waiting: map[string]int{}, changed: float64(time.Now().UnixNano()) / 1e9,
		desc: prometheus.NewDesc("vllm:lora_requests_info", "Running stats on lora requests.",
			[]string{"max_lora", "waiting_lora_adapters", "running_lora_adapters"}, nil)}
}

func (l *loraInfo) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *loraInfo) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, l.changed,
		strconv.Itoa(l.max), joinNames(l.waiting), joinNames(l.running))
}

func joinNames(m map[string]int) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// move adds d to each name's count in m, noting a change of the set.
func (l *loraInfo) move(m map[string]int, names []string, d int) {
	for _, n := range names {
		before := m[n]
		m[n] += d
		if m[n] <= 0 {
			delete(m, n)
		}
		if (before > 0) != (m[n] > 0) {
			l.changed = float64(time.Now().UnixNano()) / 1e9
		}
	}
}

// LoRARequest is one engine request's adapters on vllm:lora_requests_info:
// waiting from LoRARequest until Running, running until Done. A nil one
// (no adapters, or none served) does nothing.
type LoRARequest struct {
	l     *loraInfo
	names []string
	state int // 0 waiting, 1 running, 2 done
}

// LoRARequest starts tracking a request applying the adapters names; nil
// when it applies none or the server serves no adapters.
func (m *Metrics) LoRARequest(names []string) *LoRARequest {
	if m.lora == nil || len(names) == 0 {
		return nil
	}
	r := &LoRARequest{l: m.lora, names: slices.Compact(slices.Sorted(slices.Values(names)))}
	r.l.mu.Lock()
	r.l.move(r.l.waiting, r.names, 1)
	r.l.mu.Unlock()
	return r
}

// Running moves the request from waiting to running (its first token).
func (r *LoRARequest) Running() {
	if r == nil || r.state != 0 {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.move(r.l.waiting, r.names, -1)
	r.l.move(r.l.running, r.names, 1)
	r.state = 1
}

// Done ends the request; idempotent.
func (r *LoRARequest) Done() {
	if r == nil || r.state == 2 {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.state == 0 {
		r.l.move(r.l.waiting, r.names, -1)
	} else {
		r.l.move(r.l.running, r.names, -1)
	}
	r.state = 2
}
