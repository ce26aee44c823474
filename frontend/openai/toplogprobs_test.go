package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// TestTopLogprobsKeepOrder: the sampled token is the first key, then the
// alternatives as set (Go maps would sort them), a repeated text updates
// its value in place as a Python dict does, and nil is null; decoding
// keeps the order.
func TestTopLogprobsKeepOrder(t *testing.T) {
	var top openai.TopLogprobs
	top.Set("zeta", -0.5)
	top.Set("alpha", -1)
	top.Set("zeta", -0.25)
	top.Set("mu", -2)
	got, err := json.Marshal([]openai.TopLogprobs{top, nil, {}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"zeta":-0.25,"alpha":-1,"mu":-2},null,{}]`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	var back []openai.TopLogprobs
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]openai.TopLogprobs{top, nil, {}}, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if v, ok := top.Get("alpha"); !ok || v != -1 {
		t.Errorf("Get(alpha) = %v, %v", v, ok)
	}
}
