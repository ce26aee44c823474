package enginecore

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// pieces is a toy vocabulary for the gate's tests: token i is pieces[i].
var pieces = [][]byte{[]byte("<think>"), []byte("</think>"), []byte("</"), []byte("think"), []byte(">"), []byte("a"), []byte(" "), []byte("{"), []byte("</th"), []byte("ink>\n")}

func tokenOfPieces(piece string) (int32, bool) {
	for i, p := range pieces {
		if string(p) == piece {
			return int32(i), true
		}
	}
	return -1, false
}

func TestThinkGate(t *testing.T) {
	for _, tt := range []struct {
		name       string
		start, end string
		tokens     []int32
		openAt     int // the index of the token after which the constraint applies; -1: never
		mayOpen    bool
	}{
		{name: "no end tag: no gate", openAt: -2},
		{name: "a start tag that no one token spells: no gate", start: "<th", end: "</think>", openAt: -2},
		{name: "prompt opened, one-token end", end: "</think>", tokens: []int32{5, 6, 1, 7}, openAt: 2},
		{name: "prompt opened, end across three tokens", end: "</think>", tokens: []int32{5, 2, 3, 4, 7}, openAt: 3},
		{name: "prompt opened, end across two other tokens, text after it in the token", end: "</think>", tokens: []int32{8, 9, 7}, openAt: 1},
		{name: "prompt opened, a false start of the end", end: "</think>", tokens: []int32{2, 5, 2, 3, 4}, openAt: 4},
		{name: "prompt opened, never ends", end: "</think>", tokens: []int32{5, 5, 2, 3}, openAt: -1},
		{name: "the answer opens the block", start: "<think>", end: "</think>", tokens: []int32{0, 5, 1, 7}, openAt: 2, mayOpen: true},
		{name: "the answer starts without it", start: "<think>", end: "</think>", tokens: []int32{7, 1}, openAt: -3, mayOpen: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := wire.DefaultSamplingParams()
			p.ReasoningStart, p.ReasoningEnd = tt.start, tt.end
			g := newThinkGate(&p, tokenOfPieces)
			if tt.openAt == -2 {
				if g != nil {
					t.Fatalf("gate %+v, want none", g)
				}
				return
			}
			if g == nil {
				t.Fatal("no gate")
			}
			if g.masks() != tt.mayOpen {
				t.Fatalf("masks the first token: %v, want %v", g.masks(), tt.mayOpen)
			}
			for i, tok := range tt.tokens {
				open, accept := g.step(tok, pieces[tok])
				if tt.openAt == -3 { // the first token is the constraint's
					if !open || !accept {
						t.Fatalf("token %d: open %v accept %v, want the constraint to take it", i, open, accept)
					}
					return
				}
				if accept {
					t.Fatalf("token %d accepted by the matcher while thinking", i)
				}
				if open != (i == tt.openAt) {
					t.Fatalf("token %d: open %v, want open at %d", i, open, tt.openAt)
				}
				if open {
					return
				}
				if g.masks() {
					t.Fatalf("token %d: the mask applies inside the block", i)
				}
			}
			if tt.openAt >= 0 {
				t.Fatalf("never opened, want at %d", tt.openAt)
			}
		})
	}
}

// TestThinkGateAllow: while the answer may open the block, the start tag
// is allowed beside the constraint's tokens, which stay as they are.
func TestThinkGateAllow(t *testing.T) {
	p := wire.DefaultSamplingParams()
	p.ReasoningStart, p.ReasoningEnd = "<think>", "</think>"
	g := newThinkGate(&p, func(string) (int32, bool) { return 37, true })
	mask := []uint32{1 << 5, 0}
	g.allow(mask)
	if mask[0] != 1<<5 || mask[1] != 1<<5 {
		t.Fatalf("mask %b %b, want token 5 kept and token 37 allowed", mask[0], mask[1])
	}
	g.step(37, []byte("<think>"))
	mask = []uint32{0, 0}
	g.allow(mask)
	if mask[1] != 0 {
		t.Fatal("the start tag is still allowed inside the block")
	}
}

// TestThinkGateProperty: inside the block the gate opens after exactly
// the first token whose end makes the answer's bytes contain the end tag,
// whatever the tokens' cuts, with the tail it keeps bounded.
func TestThinkGateProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("</thinka>")
	for range 2000 {
		end := []byte("</think>")[:1+rng.IntN(8)]
		p := wire.DefaultSamplingParams()
		p.ReasoningEnd = string(end)
		g := newThinkGate(&p, tokenOfPieces)
		var answer []byte
		for step := range 40 {
			piece := make([]byte, 1+rng.IntN(4))
			for i := range piece {
				piece[i] = alphabet[rng.IntN(len(alphabet))]
			}
			answer = append(answer, piece...)
			open, accept := g.step(0, piece)
			if want := bytes.Contains(answer, end); open != want || accept {
				t.Fatalf("end %q, answer %q (step %d): open %v accept %v, want open %v", end, answer, step, open, accept, want)
			}
			if open {
				break
			}
			if len(g.tail) >= len(end) {
				t.Fatalf("tail %q holds %d bytes, want fewer than the end tag's %d", g.tail, len(g.tail), len(end))
			}
		}
	}
}
