package enginecore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/inproc"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
)

// constrainedEngine is an in-process dummy engine (random weights, byte
// tokens 0–255 stand for their byte) with its vocabulary.
func constrainedEngine(t *testing.T) *engineclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := inproc.Start(context.Background(), inproc.Config{Model: "dummy", Threads: 1, MaxModelLen: 512, MaxNumSeqs: 16, WarmUpTokens: -1}) // serves until Close
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	c, err := engineclient.Dial(engineclient.Config{Endpoints: []string{eng.Endpoint()}, Logger: quiet}) // the engine's default heartbeats
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// generate runs one request to its end and returns its text (the dummy
// model's byte tokens) and finish.
func generate(t *testing.T, c *engineclient.Client, id string, p wire.SamplingParams) (string, wire.FinishReason, any) {
	t.Helper()
	g, err := c.Generate(context.Background(), []int32{5, 6, 7, 8, 9}, p, id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var text []byte
	for {
		o, err := g.Next(ctx)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, tok := range o.NewTokenIDs {
			if tok < 256 {
				text = append(text, byte(tok))
			}
		}
		if o.FinishReason != wire.FinishNone {
			return string(text), o.FinishReason, o.StopReason
		}
	}
}

// TestStructuredOutputsConstrainTheModel: whatever the random model
// prefers, a constrained request's output is what its constraint allows,
// complete, ending on EOS; greedy and sampled alike, and an unconstrained
// request in the same engine is unchanged by its neighbours.
func TestStructuredOutputsConstrainTheModel(t *testing.T) {
	c := constrainedEngine(t)
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","n","ok"],"additionalProperties":false}`
	free := func() wire.SamplingParams {
		p := wire.DefaultSamplingParams()
		p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, 24, true
		return p
	}
	alone, _, _ := generate(t, c, "free-alone", free())
	for i, temp := range []float64{0, 1, 1.5} {
		seed := int64(i)
		p := wire.DefaultSamplingParams()
		p.Temperature, p.MaxTokens, p.Seed = temp, 200, &seed
		p.StructuredOutputs = &wire.StructuredOutputs{JSON: schema}
		text, finish, _ := generate(t, c, fmt.Sprint("json-", i), p)
		var v struct {
			Name *string `json:"name"`
			N    *int64  `json:"n"`
			OK   *bool   `json:"ok"`
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.Name == nil || v.N == nil || v.OK == nil || len([]rune(*v.Name)) > 8 {
			t.Fatalf("temperature %v: %q (%v) does not validate: %v", temp, text, finish, err)
		}
		if finish != wire.FinishStop {
			t.Fatalf("temperature %v: finish %v, want stop at the end of the JSON", temp, finish)
		}
	}
	tests := []struct {
		so    wire.StructuredOutputs
		check func(string) bool
	}{
		{wire.StructuredOutputs{Regex: `[0-9]{3}-[a-z]{2,5}`}, regexp.MustCompile(`^[0-9]{3}-[a-z]{2,5}$`).MatchString},
		{wire.StructuredOutputs{Choice: []string{"red", "green", "blue"}}, func(s string) bool { return slices.Contains([]string{"red", "green", "blue"}, s) }},
		{wire.StructuredOutputs{JSONObject: true}, func(s string) bool {
			var m map[string]any
			return json.Unmarshal([]byte(s), &m) == nil
		}},
		{wire.StructuredOutputs{Grammar: "start: \"[\" num (\",\" num)* \"]\"\nnum: /[1-9][0-9]?/"}, regexp.MustCompile(`^\[[1-9][0-9]?(,[1-9][0-9]?)*\]$`).MatchString},
	}
	for i, tt := range tests {
		p := wire.DefaultSamplingParams()
		p.Temperature, p.MaxTokens = 1, 300
		seed := int64(100 + i)
		p.Seed = &seed
		so := tt.so
		p.StructuredOutputs = &so
		text, finish, _ := generate(t, c, fmt.Sprint("c-", i), p)
		if !tt.check(text) || finish != wire.FinishStop {
			t.Errorf("%+v: %q, finish %v", tt.so, text, finish)
		}
	}
	if again, _, _ := generate(t, c, "free-again", free()); again != alone {
		t.Errorf("unconstrained greedy output changed after constrained requests: %q, then %q", alone, again)
	}
}

// TestStructuredOutputsRefused: a constraint the engine cannot compile,
// or more than one, is refused with an error naming it.
func TestStructuredOutputsRefused(t *testing.T) {
	c := constrainedEngine(t)
	for i, tt := range []struct {
		so   wire.StructuredOutputs
		want string
	}{
		{wire.StructuredOutputs{JSON: `{"type":`}, "not valid JSON"},
		{wire.StructuredOutputs{Regex: `(`}, "regex"},
		{wire.StructuredOutputs{JSON: `{"type":"object"}`, Regex: `a`}, "set exactly one"},
		{wire.StructuredOutputs{}, "sets no constraint"},
		{wire.StructuredOutputs{StructuralTag: `{}`}, "structural_tag"},
	} {
		p := wire.DefaultSamplingParams()
		so := tt.so
		p.StructuredOutputs = &so
		// Each its own id: an id is free again only once the client's
		// reader has forgotten it, just after the last output.
		_, finish, reason := generate(t, c, fmt.Sprint("bad-", i), p)
		msg, _ := reason.(string)
		if finish != wire.FinishError || !strings.Contains(msg, tt.want) {
			t.Errorf("%+v: finish %v %q, want an error containing %q", tt.so, finish, msg, tt.want)
		}
	}
}

// TestConstraintPrefixAndMaskedLogprobs: with _tandem_constraint_prefix
// the constraint first takes the prompt's last tokens (a beam's answer so
// far) and the next token continues it; with _tandem_masked_logprobs the
// top logprobs rank only tokens the constraint allows. A prefix the
// constraint refuses is a per-request error.
func TestConstraintPrefixAndMaskedLogprobs(t *testing.T) {
	c := constrainedEngine(t)
	run := func(id string, prompt []int32, p wire.SamplingParams) engineclient.Output {
		t.Helper()
		g, err := c.Generate(context.Background(), prompt, p, id)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for {
			o, err := g.Next(ctx)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if o.FinishReason != wire.FinishNone {
				return o
			}
		}
	}
	p := wire.DefaultSamplingParams()
	k := 20
	p.Temperature, p.MaxTokens, p.Logprobs, p.MaskedLogprobs = 0, 1, &k, true
	p.StructuredOutputs = &wire.StructuredOutputs{Regex: "abc[xy]z"}
	p.ConstraintPrefix = 3
	// The prompt ends with the answer so far, "abc": the next token must be x or y.
	out := run("prefix", []int32{5, 6, 'a', 'b', 'c'}, p)
	if len(out.NewTokenIDs) != 1 || (out.NewTokenIDs[0] != 'x' && out.NewTokenIDs[0] != 'y') {
		t.Fatalf("after the prefix abc the token is %v (finish %v %v), want x or y", out.NewTokenIDs, out.FinishReason, out.StopReason)
	}
	finite := 0
	for j, lp := range out.NewLogprobs.Logprobs[0] {
		if id := out.NewLogprobs.TokenIDs[0][j]; !math.IsInf(lp, -1) {
			finite++
			if id != 'x' && id != 'y' {
				t.Fatalf("masked logprobs rank token %d (%g), which the constraint refuses", id, lp)
			}
		}
	}
	if finite == 0 {
		t.Fatal("no finite logprob")
	}
	if out := run("refused", []int32{5, 6, 'a', 'q', 'c'}, p); out.FinishReason != wire.FinishError {
		t.Fatalf("a prefix the constraint refuses: finish %v, want an error", out.FinishReason)
	}
}

// TestConstraintAfterThinking: with think tags, a constrained answer
// samples freely inside its think block, and the constraint applies from
// the token after the end tag (the dummy model's byte tokens: logit_bias
// makes it write the tags; the regex refuses them).
func TestConstraintAfterThinking(t *testing.T) {
	c := constrainedEngine(t)
	for _, tt := range []struct {
		name       string
		start, end string
		bias       map[int32]float64
		want       string // a regexp the whole answer matches
	}{
		{name: "the prompt opened the block", end: ">", bias: map[int32]float64{'>': 100}, want: `^>[a-z]{3}$`},
		{name: "the answer opens the block; the end tag spans tokens", start: "<", end: "<<", bias: map[int32]float64{'<': 100}, want: `^<<<[a-z]{3}$`},
		{name: "the answer does not open the block", start: "<", end: ">", bias: map[int32]float64{'<': -100, '>': 100}, want: `^[a-z]{3}$`},
		{name: "a start tag of two tokens cannot be offered: constrained at once", start: "<<", end: ">", bias: map[int32]float64{'<': 100, '>': 100}, want: `^[a-z]{3}$`},
		{name: "no tags: constrained at once", bias: map[int32]float64{'>': 100}, want: `^[a-z]{3}$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := wire.DefaultSamplingParams()
			p.Temperature, p.MaxTokens = 0, 32
			p.StructuredOutputs = &wire.StructuredOutputs{Regex: "[a-z]{3}"}
			p.ReasoningStart, p.ReasoningEnd, p.LogitBias = tt.start, tt.end, tt.bias
			text, finish, why := generate(t, c, strings.ReplaceAll(tt.name, " ", "-"), p)
			if finish != wire.FinishStop || !regexp.MustCompile(tt.want).MatchString(text) {
				t.Fatalf("answer %q (finish %v %v), want one matching %s, ended by EOS", text, finish, why, tt.want)
			}
		})
	}
}

// TestThinkingBudget: once an answer has sampled its thinking budget's
// tokens inside the think block, the engine forces the budget message and
// the end tag (spelled by the dummy model's byte tokens), then the answer
// goes on, under its constraint if it has one.
func TestThinkingBudget(t *testing.T) {
	c := constrainedEngine(t)
	for _, tt := range []struct {
		name, start, end, message string
		budget                    int
		regex                     string
		want                      string // a regexp the whole answer matches
	}{
		{name: "the prompt opened the block", end: "</think>", budget: 3, want: `^<<<</think><+$`},
		{name: "the answer opens the block", start: "<", end: ">", budget: 2, want: `^<<<><+$`},
		{name: "a message before the end tag", end: "</think>", message: "\nTime is up.\n", budget: 1, want: "^<\nTime is up.\n</think><+$"},
		{name: "budget 0", end: "</think>", budget: 0, want: `^</think><+$`},
		{name: "then the constraint", end: ">", budget: 2, regex: "[a-z]{3}", want: `^<<>[a-z]{3}$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := wire.DefaultSamplingParams()
			p.Temperature, p.MaxTokens = 0, 24
			p.LogitBias = map[int32]float64{'<': 100}
			p.ReasoningStart, p.ReasoningEnd, p.ReasoningBudgetMessage = tt.start, tt.end, tt.message
			p.ThinkingTokenBudget = &tt.budget
			if tt.regex != "" {
				p.StructuredOutputs = &wire.StructuredOutputs{Regex: tt.regex}
			}
			text, finish, why := generate(t, c, strings.ReplaceAll(tt.name, " ", "-"), p)
			if !regexp.MustCompile(tt.want).MatchString(text) {
				t.Fatalf("answer %q (finish %v %v), want one matching %q", text, finish, why, tt.want)
			}
		})
	}
}
