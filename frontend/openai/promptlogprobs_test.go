package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPromptLogprobsJSON: entries keep their key order through JSON both
// ways, and a nil entry (the first position) is null.
func TestPromptLogprobsJSON(t *testing.T) {
	one, six := 1, 6
	text := "You"
	in := PromptLogprobs{nil, {
		{2683, PromptLogprob{Logprob: -4.5, Rank: &six, DecodedToken: &text}},
		{19, PromptLogprob{Logprob: -1.5, Rank: &one}},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `[null,{"2683":{"logprob":-4.5,"rank":6,"decoded_token":"You"},"19":{"logprob":-1.5,"rank":1,"decoded_token":null}}]`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back PromptLogprobs
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`[{"x":{}}]`), &back); err == nil {
		t.Error("a key that is not a token id decoded")
	}
}
