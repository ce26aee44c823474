package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// loraLabels gathers vllm:lora_requests_info's one series: its labels
// and value.
func loraLabels(t *testing.T, m *Metrics) (map[string]string, float64) {
	t.Helper()
	fams, err := m.own.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "vllm:lora_requests_info" {
			continue
		}
		if len(f.GetMetric()) != 1 || f.GetType() != dto.MetricType_GAUGE {
			t.Fatalf("%d series of type %v", len(f.GetMetric()), f.GetType())
		}
		labels := map[string]string{}
		for _, lp := range f.GetMetric()[0].GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		return labels, f.GetMetric()[0].GetGauge().GetValue()
	}
	return nil, 0
}

func TestLoRARequestsInfo(t *testing.T) {
	if l, _ := loraLabels(t, New(Config{ModelName: "m"})); l != nil {
		t.Fatalf("exported without adapters: %v", l)
	}
	m := New(Config{ModelName: "m", LoRA: true, MaxLoRA: 4})
	if m.LoRARequest(nil) != nil {
		t.Error("a request without adapters is tracked")
	}
	a := m.LoRARequest([]string{"sql", "tone"})
	b := m.LoRARequest([]string{"sql"})
	steps := []struct {
		name             string
		do               func()
		running, waiting string
	}{
		{"two waiting", func() {}, "", "sql,tone"},
		{"one running, sql still waiting in the other", a.Running, "sql,tone", "sql"},
		{"running twice changes nothing", a.Running, "sql,tone", "sql"},
		{"both running", b.Running, "sql,tone", ""},
		{"a done: sql still running in b", a.Done, "sql", ""},
		{"done twice changes nothing", a.Done, "sql", ""},
		{"b done", b.Done, "", ""},
		{"nil is a no-op", func() { var n *LoRARequest; n.Running(); n.Done() }, "", ""},
	}
	last := 0.0
	for _, s := range steps {
		s.do()
		l, v := loraLabels(t, m)
		if l["running_lora_adapters"] != s.running || l["waiting_lora_adapters"] != s.waiting || l["max_lora"] != "4" {
			t.Errorf("%s: %v, want running %q waiting %q", s.name, l, s.running, s.waiting)
		}
		if v < last || v < 1.7e9 {
			t.Errorf("%s: value %v, a Unix time not before %v", s.name, v, last)
		}
		last = v
	}
}
