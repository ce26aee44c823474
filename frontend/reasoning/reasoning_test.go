package reasoning

import (
	"math/rand/v2"
	"os"
	"testing"
)

func TestSplit(t *testing.T) {
	f, _ := Lookup("qwen3")
	tests := []struct {
		name, answer       string
		open               bool
		reasoning, content string
	}{
		{"no think block: all content, unchanged", "  Hello <think> there\n", false, "", "  Hello <think> there\n"},
		{"Qwen3", "<think>\nLet me see.\n2+2=4.\n</think>\n\nIt is 4.", false, "Let me see.\n2+2=4.", "It is 4."},
		{"leading blanks before the tag", "\n\n<think>x</think>y", false, "x", "y"},
		{"empty think block (enable_thinking false)", "<think>\n\n</think>\n\nHi", false, "", "Hi"},
		{"opened by the prompt (DeepSeek-R1)", "Hmm.\n</think>\n\nYes.", true, "Hmm.", "Yes."},
		{"cut inside the reasoning", "<think>\nstill thinking", false, "still thinking", ""},
		{"cut inside the end tag", "<think>abc</thi", false, "abc</thi", ""},
		{"the answer is only a tag's beginning", "<thi", false, "", "<thi"},
		{"tags later in the content stay", "<think>a</think>b <think>c</think>", false, "a", "b <think>c</think>"},
		{"content keeps its own blanks", "<think>a</think>b\n\n c ", false, "a", "b\n\n c "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, c := f.Split(tc.answer, tc.open)
			if r != tc.reasoning || c != tc.content {
				t.Errorf("Split(%q) = %q, %q; want %q, %q", tc.answer, r, c, tc.reasoning, tc.content)
			}
		})
	}
}

// TestStreamSplitsAsWhole cuts answers at random points: the pieces'
// reasoning and content join to the whole answer's.
func TestStreamSplitsAsWhole(t *testing.T) {
	f, _ := Lookup("deepseek_r1")
	parts := []string{"<think>", "</think>", "<", "</", "think", ">", " ", "\n", "a", "b.", "é", "<thi", "</th"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		answer := ""
		for range rng.IntN(12) {
			answer += parts[rng.IntN(len(parts))]
		}
		open := rng.IntN(3) == 0
		wantR, wantC := f.Split(answer, open)
		if r, c := streamed(f.New(open), answer, rng); r != wantR || c != wantC {
			t.Fatalf("%q (open %v) streamed: %q, %q; whole: %q, %q", answer, open, r, c, wantR, wantC)
		}
	}
}

// streamed splits answer through s in pieces cut at random.
func streamed(s *Splitter, answer string, rng *rand.Rand) (reasoning, content string) {
	for rest := answer; rest != ""; {
		n := 1 + rng.IntN(len(rest))
		r, c := s.Push(rest[:n])
		reasoning, content, rest = reasoning+r, content+c, rest[n:]
	}
	r, c := s.Finish()
	return reasoning + r, content + c
}

func TestDetectAndPrompt(t *testing.T) {
	if _, ok := Detect("{{ '<|im_start|>' }}"); ok {
		t.Error("a template without think tags detected")
	}
	f, ok := Detect("{%- if '</think>' in content %}{%- set content = content.split('</think>')[-1] %}")
	if !ok || f.Name != "qwen3" {
		t.Errorf("Qwen3's template: %v %v", f, ok)
	}
	if !f.OpensInPrompt("<|im_start|>assistant\n<think>\n") || f.OpensInPrompt("<|im_start|>assistant\n") {
		t.Error("OpensInPrompt")
	}
	closed := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n" // Qwen3's with enable_thinking false
	if !f.ClosedInPrompt(closed) || f.OpensInPrompt(closed) || f.ClosedInPrompt("<|im_start|>assistant\n<think>\n") ||
		f.ClosedInPrompt("<think>a</think>b<|im_end|>\n<|im_start|>assistant\n") {
		t.Error("ClosedInPrompt")
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup(nope)")
	}
	if f, ok := Detect("{{ '<seed:think>' }}{{ reasoning }}{{ '</seed:think>' }}"); !ok || f.Name != "seed_oss" {
		t.Errorf("Seed-OSS's template: %v %v", f, ok)
	}
	if f, ok := Detect("{%- if m.thinking %}[THINK]{{ m.thinking }}[/THINK]{% endif %}"); !ok || f.Name != "mistral" || !f.Special {
		t.Errorf("Magistral's template: %v %v", f, ok)
	}
	seed, _ := Lookup("seed_oss")
	if r, c := seed.Split("<seed:think>a</seed:think>b", false); r != "a" || c != "b" {
		t.Errorf("seed_oss split %q %q", r, c)
	}
	// MiniMax-M2 writes no start tag: its answer starts inside the block,
	// unless the prompt closed it.
	mm, _ := Lookup("minimax_m2")
	if !mm.OpensInPrompt("<|assistant|>") || mm.OpensInPrompt("<|assistant|><think>\n</think>\n") {
		t.Error("minimax_m2 OpensInPrompt")
	}
	if r, c := mm.Split("a</think>b", mm.OpensInPrompt("x")); r != "a" || c != "b" {
		t.Errorf("minimax_m2 split %q %q", r, c)
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("<think>a</think>b", 3, false)
	f.Add("x</think>\ny", 1, true)
	fm, _ := Lookup("qwen3")
	f.Fuzz(func(t *testing.T, answer string, cut int, open bool) {
		wantR, wantC := fm.Split(answer, open)
		if cut < 0 || cut > len(answer) {
			cut = len(answer) / 2
		}
		s := fm.New(open)
		r1, c1 := s.Push(answer[:cut])
		r2, c2 := s.Push(answer[cut:])
		r3, c3 := s.Finish()
		if r1+r2+r3 != wantR || c1+c2+c3 != wantC {
			t.Fatalf("cut at %d: %q, %q; whole %q, %q", cut, r1+r2+r3, c1+c2+c3, wantR, wantC)
		}
	})
}

// TestDetectTemplates: of the real templates in chattemplate's testdata,
// Qwen3's describes think tags; Qwen2.5's, Llama 3's, Mistral's and
// SmolLM2's do not.
func TestDetectTemplates(t *testing.T) {
	for name, want := range map[string]bool{"qwen3": true, "qwen2.5": false, "llama3-instruct": false, "mistral-instruct": false, "smollm2": false} {
		src, err := os.ReadFile("../chattemplate/testdata/templates/" + name + ".jinja")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := Detect(string(src)); ok != want {
			t.Errorf("%s: detected %v, want %v", name, ok, want)
		}
	}
}
