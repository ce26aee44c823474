package decisions

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeErrors(t *testing.T) {
	q := `{"type":"predicate","instructions":"Is it red?"}`
	choice := func(vals ...string) string {
		return `{"type":"choice","instructions":"Which?","choices":[{"value":` + strings.Join(vals, `},{"value":`) + `}]}`
	}
	tests := []struct{ name, body, want string }{
		{"no questions", `{"model":"m","input":"x","questions":[]}`, "at least 1 question"},
		{"unknown field", `{"model":"m","input":"x","questions":[` + q + `],"temperature":1}`, `unknown field "temperature"`},
		{"image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}],"questions":[` + q + `]}`, "text input only"},
		{"assistant input", `{"model":"m","input":[{"role":"assistant","content":"x"}],"questions":[` + q + `]}`, `role must be "user"`},
		{"joint", `{"model":"m","input":"x","questions":[` + q + `],"joint":true}`, "joint reads need DiffusionGemma"},
		{"one choice", `{"model":"m","input":"x","questions":[` + choice(`"a"`) + `]}`, "choices: between 2 and 255"},
		{"same choices", `{"model":"m","input":"x","questions":[` + choice(`"a"`, `"a"`) + `]}`, "distinct"},
		{"number choice", `{"model":"m","input":"x","questions":[` + choice(`"a"`, `3`) + `]}`, "string or a boolean"},
		{"27 choices", `{"model":"m","input":"x","questions":[` + choice(strings.Split(strings.Repeat(`"a",`, 26)+`"b"`, ",")...) + `]}`, "distinct"},
		{"one level", `{"model":"m","input":"x","questions":[{"type":"score","instructions":"How?","levels":[{"label":"low"}]}]}`, "levels: between 2 and 10"},
		{"unknown type", `{"model":"m","input":"x","questions":[{"type":"rank","instructions":"?"}]}`, "predicate, choice or score"},
		{"null name", `{"model":"m","input":"x","questions":[{"type":"predicate","instructions":"?","name":""}]}`, "name must be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	var many []string
	for i := range 27 {
		many = append(many, `{"value":"v`+string(rune('a'+i))+`"}`)
	}
	body := `{"model":"m","input":"x","questions":[{"type":"choice","instructions":"?","choices":[` + strings.Join(many, ",") + `]}]}`
	if _, err := Decode([]byte(body)); err == nil || !strings.Contains(err.Error(), "at most 26 choices") {
		t.Fatalf("27 distinct choices: %v", err)
	}
}

func TestContent(t *testing.T) {
	r, err := Decode([]byte(`{"model":"m","input":[{"role":"user","content":"Box 1."},{"role":"user","content":[{"type":"input_text","text":"It is broken."}]}],"questions":[` +
		`{"type":"predicate","instructions":"Broken?"},` +
		`{"type":"choice","name":"dept","instructions":"Who?","choices":[{"value":"returns","description":"goods back"},{"value":false}]},` +
		`{"type":"score","instructions":"","levels":[{"label":"none"},{"label":"bad"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Box 1.\n\nIt is broken.\n\nQuestion: Broken?\nA: false\nB: true\nAnswer with the letter of one option only.",
		"Box 1.\n\nIt is broken.\n\nQuestion: Who?\nA: \"returns\" - goods back\nB: false\nAnswer with the letter of one option only.",
		"Box 1.\n\nIt is broken.\n\nA: none\nB: bad\nAnswer with the letter of one option only.",
	}
	for i := range r.Questions {
		if diff := cmp.Diff(want[i], Content(r.Input.Text, &r.Questions[i])); diff != "" {
			t.Errorf("question %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestResponseOf(t *testing.T) {
	r, err := Decode([]byte(`{"model":"m","input":"x","questions":[{"type":"predicate","instructions":"?"},` +
		`{"type":"choice","name":"c","instructions":"?","choices":[{"value":true},{"value":false}]},` +
		`{"type":"score","name":"s","instructions":"?","levels":[{"label":"lo"},{"label":"mid"},{"label":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ln := math.Log
	reads := []Read{
		{LabelLogprobs: []float64{ln(0.1), ln(0.3)}, InputTokens: 10, OutputTokens: 1, CachedTokens: 0},
		{LabelLogprobs: []float64{ln(0.2), ln(0.6)}, InputTokens: 12, OutputTokens: 1, CachedTokens: 8},
		{LabelLogprobs: []float64{ln(0.25), ln(0.25), ln(0.5)}, InputTokens: 11, OutputTokens: 1, CachedTokens: 8},
	}
	b, err := json.Marshal(ResponseOf("m", r, reads))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Model   string
		Answers []map[string]any
		Usage   map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	near := func(a any, want float64) bool { f, ok := a.(float64); return ok && math.Abs(f-want) < 1e-9 }
	p, c, s := got.Answers[0], got.Answers[1], got.Answers[2]
	if p["type"] != "predicate" || p["name"] != nil || !near(p["probability"], 0.75) || len(p) != 3 {
		t.Errorf("predicate: %v", p)
	}
	if c["choice"] != false || !near(c["confidence"], 0.75*0.8) {
		t.Errorf("choice: %v", c)
	}
	probs := c["probabilities"].([]any)
	if v := probs[0].(map[string]any); v["value"] != true || !near(v["probability"], 0.25) || len(v) != 2 {
		t.Errorf("choice probabilities: %v", probs)
	}
	if !near(s["score"], 0*0.25+1*0.25+2*0.5) || !near(s["confidence"], 0.5) {
		t.Errorf("score: %v", s)
	}
	if lv := s["probabilities"].([]any)[2].(map[string]any); lv["value"] != 2.0 || lv["label"] != "hi" {
		t.Errorf("score level: %v", lv)
	}
	u := got.Usage
	if u["input_tokens"] != 33.0 || u["output_tokens"] != 3.0 || u["total_tokens"] != 36.0 || u["input_tokens_details"].(map[string]any)["cached_tokens"] != 16.0 {
		t.Errorf("usage: %v", u)
	}
}

// FuzzDecode: no body panics Decode, and an accepted request's questions
// all build their content and an answer.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":"x","questions":[{"type":"choice","instructions":"?","choices":[{"value":"a"},{"value":true}]}]}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"t"}]}],"questions":[{"type":"score","instructions":"","levels":[{"label":"a"},{"label":"b"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Decode(body)
		if err != nil {
			return
		}
		reads := make([]Read, len(r.Questions))
		for i := range r.Questions {
			_ = Content(r.Input.Text, &r.Questions[i])
			reads[i].LabelLogprobs = make([]float64, r.Questions[i].NumLabels())
		}
		if _, err := json.Marshal(ResponseOf("m", r, reads)); err != nil {
			t.Fatal(err)
		}
	})
}
