package enginecore

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// pieces is a toy vocabulary for the think block's tests: token i is
// pieces[i].
var pieces = [][]byte{
	[]byte("<think>"), []byte("</think>"), []byte("</"), []byte("think"), []byte(">"), // 0–4
	[]byte("a"), []byte(" "), []byte("{"), []byte("</th"), []byte("ink>\n"), // 5–9
	[]byte("<th"), []byte("ink>"), []byte("\n"), []byte("\xc3"), []byte("\xa9"), // 10–14: "é" in two tokens
	[]byte("St"), []byte("op"), []byte("Stop"), []byte("."), []byte("Stop.</think>x"), // 15–19
}

func tokenOfPieces(piece string) (int32, bool) {
	for i, p := range pieces {
		if string(p) == piece {
			return int32(i), true
		}
	}
	return -1, false
}

func params(start, end string, budget *int, message string) *wire.SamplingParams {
	p := wire.DefaultSamplingParams()
	p.ReasoningStart, p.ReasoningEnd, p.ThinkingTokenBudget, p.ReasoningBudgetMessage = start, end, budget, message
	return &p
}

func budget(n int) *int { return &n }

// TestThinking follows answers token by token: after each, the phase
// and whether the constraint's matcher takes the token.
func TestThinking(t *testing.T) {
	type step struct {
		tok    int32
		phase  thinkPhase
		accept bool
	}
	tests := []struct {
		name        string
		p           *wire.SamplingParams
		constrained bool
		first       thinkPhase // the phase before the first token
		steps       []step
	}{
		{name: "constrained, the prompt opened it, one-token end", p: params("", "</think>", nil, ""), constrained: true, first: thinkInside,
			steps: []step{{5, thinkInside, false}, {1, thinkDone, false}, {7, thinkDone, true}}},
		{name: "constrained, end across three tokens", p: params("", "</think>", nil, ""), constrained: true, first: thinkInside,
			steps: []step{{2, thinkInside, false}, {3, thinkInside, false}, {4, thinkDone, false}}},
		{name: "constrained, end in a token with text after it", p: params("", "</think>", nil, ""), constrained: true, first: thinkInside,
			steps: []step{{8, thinkInside, false}, {9, thinkDone, false}}},
		{name: "constrained, the answer opens it", p: params("<think>", "</think>", nil, ""), constrained: true, first: thinkMayOpen,
			steps: []step{{0, thinkInside, false}, {5, thinkInside, false}, {1, thinkDone, false}, {7, thinkDone, true}}},
		{name: "constrained, the answer starts without it", p: params("<think>", "</think>", nil, ""), constrained: true, first: thinkMayOpen,
			steps: []step{{7, thinkDone, true}}},
		{name: "budget, unconstrained, the answer opens it over two tokens after a blank", p: params("<think>", "</think>", budget(3), ""), first: thinkMayOpen,
			steps: []step{{12, thinkMayOpen, false}, {10, thinkMayOpen, false}, {11, thinkInside, false}, {5, thinkInside, false}, {5, thinkInside, false},
				{5, thinkClosing, false}, {1, thinkDone, false}}},
		{name: "budget, unconstrained, no block", p: params("<think>", "</think>", budget(3), ""), first: thinkMayOpen,
			steps: []step{{12, thinkMayOpen, false}, {5, thinkDone, false}}},
		{name: "budget 0, the prompt opened it: closing at once", p: params("", "</think>", budget(0), ""), first: thinkClosing,
			steps: []step{{1, thinkDone, false}}},
		{name: "budget met inside a UTF-8 character: it is completed first", p: params("", "</think>", budget(1), ""), first: thinkInside,
			steps: []step{{13, thinkInside, false}, {14, thinkClosing, false}, {2, thinkClosing, false}, {3, thinkClosing, false}, {4, thinkDone, false}}},
		{name: "the end within the budget", p: params("", "</think>", budget(5), ""), constrained: true, first: thinkInside,
			steps: []step{{5, thinkInside, false}, {1, thinkDone, false}, {7, thinkDone, true}}},
		{name: "budget with a message", p: params("", "</think>", budget(1), "Stop."), first: thinkInside,
			steps: []step{{5, thinkClosing, false}, {15, thinkClosing, false}, {16, thinkClosing, false}, {18, thinkClosing, false}, {1, thinkDone, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newThinking(tt.p, tt.constrained, tokenOfPieces)
			if th == nil {
				t.Fatal("not followed")
			}
			if th.phase != tt.first {
				t.Fatalf("first phase %v, want %v", th.phase, tt.first)
			}
			for i, s := range tt.steps {
				accept := th.step(s.tok, pieces[s.tok])
				if th.phase != s.phase || accept != s.accept {
					t.Fatalf("step %d (token %q): phase %v accept %v, want %v %v", i, pieces[s.tok], th.phase, accept, s.phase, s.accept)
				}
			}
		})
	}
}

// TestThinkingNotFollowed: without an end tag, without a constraint or a
// budget, or constrained with a start tag no one token spells, an answer
// is not followed.
func TestThinkingNotFollowed(t *testing.T) {
	for _, tt := range []struct {
		name        string
		p           *wire.SamplingParams
		constrained bool
	}{
		{"no end tag", params("", "", budget(3), ""), true},
		{"no constraint, no budget", params("<think>", "</think>", nil, ""), false},
		{"constrained, a start tag of no one token", params("<thi", "</think>", nil, ""), true},
	} {
		if th := newThinking(tt.p, tt.constrained, tokenOfPieces); th != nil {
			t.Errorf("%s: followed: %+v", tt.name, th)
		}
	}
	if th := newThinking(params("<thi", "</think>", budget(2), ""), false, tokenOfPieces); th == nil || th.phase != thinkMayOpen {
		t.Errorf("a budget without a constraint follows a start tag of several tokens as text: %+v", th)
	}
}

// TestThinkingStartAllowed: while the answer may open the block, the
// start tag is allowed beside the constraint's tokens, which stay as
// they are; inside it, the constraint's mask does not apply.
func TestThinkingStartAllowed(t *testing.T) {
	th := newThinking(params("<think>", "</think>", nil, ""), true, func(string) (int32, bool) { return 37, true })
	mask := []uint32{1 << 5, 0}
	th.allowStart(mask)
	if !th.masks() || mask[0] != 1<<5 || mask[1] != 1<<5 {
		t.Fatalf("mask %b %b, want token 5 kept and token 37 allowed", mask[0], mask[1])
	}
	th.step(37, []byte("<think>"))
	if th.masks() {
		t.Fatal("the constraint's mask applies inside the block")
	}
}

// TestNextForced: a closing block forces one token: the longest that
// spells the beginning of what is left.
func TestNextForced(t *testing.T) {
	var byFirst [256][]int32
	for id, p := range pieces {
		byFirst[p[0]] = append(byFirst[p[0]], int32(id))
	}
	for _, tt := range []struct {
		forced string
		want   []int32
	}{
		{"</think>", []int32{1}},
		{"</thin", []int32{8}},
		{"Stop.</think>", []int32{17}},
		{"op.</think>", []int32{16}},
		{"ink>", []int32{11}},
		{"think>", []int32{3}},
		{"é</think>", []int32{13}},
	} {
		th := &thinking{phase: thinkClosing, forced: []byte(tt.forced)}
		if got := []int32{th.nextForced(&byFirst, pieces)}; !slices.Equal(got, tt.want) || th.phase != thinkClosing {
			t.Errorf("forcing %q: allowed %v (phase %v), want %v", tt.forced, got, th.phase, tt.want)
		}
	}
	th := &thinking{phase: thinkClosing, forced: []byte("zz")}
	if tok := th.nextForced(&byFirst, pieces); tok != -1 || th.phase != thinkDone {
		t.Errorf("bytes no token begins: token %d, phase %v, want the block given up (done)", tok, th.phase)
	}
}

func TestOpenUTF8(t *testing.T) {
	for _, tt := range []struct {
		b    string
		want bool
	}{
		{"", false}, {"a", false}, {"é", false}, {"\xc3", true}, {"a\xe2\x82", true}, {"€", false}, {"\xf0\x9f\x99", true}, {"🙂", false}, {"\x80\x80\x80", false},
	} {
		if got := openUTF8([]byte(tt.b)); got != tt.want {
			t.Errorf("openUTF8(%q) = %v, want %v", tt.b, got, tt.want)
		}
	}
}

// TestThinkingProperty: inside the block the end is found after exactly
// the first token whose end makes the answer's bytes contain the end
// tag, whatever the tokens' cuts, with the tail kept bounded.
func TestThinkingProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("</thinka>")
	for range 2000 {
		end := []byte("</think>")[:1+rng.IntN(8)]
		th := newThinking(params("", string(end), nil, ""), true, tokenOfPieces)
		var answer []byte
		for step := range 40 {
			piece := make([]byte, 1+rng.IntN(4))
			for i := range piece {
				piece[i] = alphabet[rng.IntN(len(alphabet))]
			}
			answer = append(answer, piece...)
			accept := th.step(0, piece)
			if want := bytes.Contains(answer, end); (th.phase == thinkDone) != want || accept {
				t.Fatalf("end %q, answer %q (step %d): phase %v accept %v, want done %v", end, answer, step, th.phase, accept, want)
			}
			if th.phase == thinkDone {
				break
			}
			if len(th.tail) > max(len(end)-1, 3) {
				t.Fatalf("tail %q holds %d bytes, want at most %d", th.tail, len(th.tail), max(len(end)-1, 3))
			}
		}
	}
}

// FuzzThinking drives the think block's machine with any answer over
// the toy vocabulary, forcing the tokens nextForced names:
// phases only move forward, the tail stays bounded, the budget holds
// (plus a UTF-8 character's completion), and every forced token spells
// the next forced bytes.
func FuzzThinking(f *testing.F) {
	f.Add([]byte{0, 5, 5, 1, 7}, "<think>", "</think>", 2, "Stop.", true)
	f.Add([]byte{12, 10, 11, 13, 14, 5}, "<think>", "</think>", 1, "", false)
	f.Add([]byte{5, 2, 3, 4}, "", "</think>", -1, "", true)
	f.Fuzz(func(t *testing.T, answer []byte, start, end string, budget int, message string, constrained bool) {
		if len(start) > maxThinkTag || len(end) > maxThinkTag || len(message) > 64 || budget > 64 {
			return
		}
		var b *int
		if budget >= 0 {
			b = &budget
		}
		th := newThinking(params(start, end, b, message), constrained, tokenOfPieces)
		if th == nil {
			return
		}
		var byFirst [256][]int32
		for id, p := range pieces {
			byFirst[p[0]] = append(byFirst[p[0]], int32(id))
		}
		for _, c := range answer {
			tok := int32(int(c) % len(pieces))
			before := th.phase
			if th.phase == thinkClosing {
				forced := th.forced
				if tok = th.nextForced(&byFirst, pieces); tok < 0 {
					continue // nothing spells the forced bytes: the block is given up
				}
				if !bytes.HasPrefix(forced, pieces[tok]) {
					t.Fatalf("forced %q, allowed %q", forced, pieces[tok])
				}
			}
			th.step(tok, pieces[tok])
			if th.phase < before {
				t.Fatalf("phase %v after %v", th.phase, before)
			}
			if len(th.tail) > max(len(th.end)-1, 3) {
				t.Fatalf("tail of %d bytes", len(th.tail))
			}
			if th.phase == thinkInside && th.budget >= 0 && th.spent >= th.budget+3 {
				t.Fatalf("spent %d inside with budget %d", th.spent, th.budget)
			}
			if th.phase == thinkDone {
				return
			}
		}
	})
}
