package openai_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// TestTopLogprobsKeepOrder: the sampled token is the first key, then the
// alternatives as set (Go maps would sort them), a repeated text updates
// its value in place as a Python dict does, and nil is null; decoding
// keeps the order.
func TestTopLogprobsKeepOrder(t *testing.T) {
	set := []openai.TopLogprob{{Token: "zeta", Logprob: -0.5}, {Token: "alpha", Logprob: -1}, {Token: "zeta", Logprob: -0.25}, {Token: "mu", Logprob: -2}}
	top := openai.TopLogprobsOf(len(set), func(i int) (string, openai.Logprob) { return set[i].Token, set[i].Logprob })
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
}

// TestTopLogprobsOfMany: past the scan's reach (a full-vocabulary
// position) repeats still update their first place.
func TestTopLogprobsOfMany(t *testing.T) {
	const n = 1000
	top := openai.TopLogprobsOf(2*n, func(i int) (string, openai.Logprob) {
		return fmt.Sprint(i % n), openai.Logprob(-i)
	})
	if len(top) != n || top[0].Token != "0" || top[0].Logprob != -n || top[n-1].Token != fmt.Sprint(n-1) || top[n-1].Logprob != -(2*n-1) {
		t.Errorf("%d entries, first %+v, last %+v", len(top), top[0], top[len(top)-1])
	}
}
