package openai

import (
	"encoding/json"
	"testing"
)

// TestConstraintStructuralTag: response_format's structural_tag reaches
// the engine as vLLM sends it (the format's JSON, type included), and
// structured_outputs.structural_tag as an object or a string of one.
func TestConstraintStructuralTag(t *testing.T) {
	const tag = `{"type":"structural_tag","structures":[{"begin":"<f=a>","schema":{"type":"object"},"end":"</f>"}],"triggers":["<f="]}`
	for _, body := range []string{
		`{"response_format":` + tag + `}`,
		`{"structured_outputs":{"structural_tag":` + tag + `}}`,
		`{"structured_outputs":{"structural_tag":` + string(must(json.Marshal(tag))) + `}}`,
	} {
		var p Params
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		so, e := p.Constraint()
		if e != nil {
			t.Fatalf("%s: %v", body, e)
		}
		var got, want any
		if err := json.Unmarshal([]byte(so.StructuralTag), &got); err != nil {
			t.Fatalf("%s: structural_tag %q: %v", body, so.StructuralTag, err)
		}
		_ = json.Unmarshal([]byte(tag), &want)
		if string(must(json.Marshal(got))) != string(must(json.Marshal(want))) {
			t.Fatalf("%s: structural_tag %s, want %s", body, so.StructuralTag, tag)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
