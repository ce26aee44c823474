package enginecore

import (
	"testing"

	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/wire"
)

// TestEventAdapter: the adapter a LoRA request's KV events name.
func TestEventAdapter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		loras []wire.LoRARequest
		want  kvcache.Adapter
	}{
		{"none", nil, kvcache.Adapter{}},
		{"one, as vLLM sends it", []wire.LoRARequest{{Name: "alpha", ID: 3, Scale: 1}}, kvcache.Adapter{Name: "alpha", ID: 3}},
		{"a scale 0 changes nothing", []wire.LoRARequest{{Name: "alpha", ID: 3, Scale: 0}, {Name: "beta", ID: 4, Scale: 0.5}}, kvcache.Adapter{Name: "beta", ID: 4}},
		{"several: their names, no id", []wire.LoRARequest{{Name: "alpha", ID: 3, Scale: 1}, {Name: "beta", ID: 4, Scale: 0.5}}, kvcache.Adapter{Name: "alpha+beta"}},
	} {
		if got := eventAdapter(tc.loras); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
