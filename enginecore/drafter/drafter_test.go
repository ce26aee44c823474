package drafter

import (
	"context"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// counting is a draft model whose greedy next token is the last input
// token plus one (mod V), with probability about 1 − (V−1)e^−peak. It
// checks every step's layout and counts the tokens fed.
type counting struct {
	t      *testing.T
	vocab  int
	peak   float32
	fed    int
	passes int
}

func (b *counting) Model() runner.ModelInfo   { return runner.ModelInfo{VocabSize: b.vocab} }
func (b *counting) AllocateKV(int, int) error { return nil }
func (b *counting) KVBytesPerBlock(int) int64 { return 0 }
func (b *counting) Close() error              { return nil }
func (b *counting) Forward(_ context.Context, st *runner.Step, logits []float32) error {
	b.passes++
	b.fed += len(st.TokenIDs)
	for i, s := range st.Seqs {
		for j := range s.Len {
			t := s.Start + j
			p := int(st.Positions[t])
			if p != s.ContextLen-s.Len+j {
				b.t.Errorf("seq %d token %d at position %d, context %d of %d", i, j, p, s.ContextLen, s.Len)
			}
			if want := s.BlockTable[p/4]*4 + int32(p%4); st.SlotMapping[t] != want {
				b.t.Errorf("position %d: slot %d, block table says %d", p, st.SlotMapping[t], want)
			}
		}
		row := logits[i*b.vocab : (i+1)*b.vocab]
		clear(row)
		row[(int(st.TokenIDs[s.Start+s.Len-1])+1)%b.vocab] = b.peak
	}
	return nil
}

func newDrafter(t *testing.T, blocks int, pmin float64, catchUp int) (*Drafter, *counting) {
	be := &counting{t: t, vocab: 64, peak: 20}
	d, err := New(be, Config{NumBlocks: blocks, BlockSize: 4, PMin: pmin, CatchUp: catchUp})
	if err != nil {
		t.Fatal(err)
	}
	return d, be
}

// TestPropose: a new request is caught up and drafted in K passes;
// after the target kept some drafts and one more token, only those are
// fed again; a request whose tokens changed earlier (a context shift) is
// fed from where they differ.
func TestPropose(t *testing.T) {
	d, be := newDrafter(t, 16, 0, 0)
	toks := []int32{5, 6, 7, 8, 9}
	got, err := d.Propose(context.Background(), []Req{{ID: "a", Tokens: toks, K: 3}, {ID: "b", Tokens: []int32{40, 41}, K: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0], []int32{10, 11, 12}) || !slices.Equal(got[1], []int32{42, 43}) {
		t.Fatalf("drafts %v", got)
	}
	if be.passes != 3 || be.fed != 5+2+2+1 {
		t.Errorf("%d passes feeding %d tokens, want 3 feeding 10", be.passes, be.fed)
	}
	// The target kept 10 and 11 and sampled 20: the cache holds 5..9,
	// 10, 11; only 20 is new.
	be.fed = 0
	toks = append(toks, 10, 11, 20)
	got, _ = d.Propose(context.Background(), []Req{{ID: "a", Tokens: toks, K: 2}})
	if !slices.Equal(got[0], []int32{21, 22}) || be.fed != 1+1 {
		t.Errorf("after keeping 2: draft %v, fed %d tokens, want [21 22] and 2", got[0], be.fed)
	}
	// The whole history rewritten after its second token: fed from there.
	be.fed = 0
	shifted := []int32{5, 6, 30, 31}
	got, _ = d.Propose(context.Background(), []Req{{ID: "a", Tokens: shifted, K: 1}})
	if !slices.Equal(got[0], []int32{32}) || be.fed != 2 {
		t.Errorf("after a shift: draft %v, fed %d, want [32] and 2", got[0], be.fed)
	}
	// Nothing new at all (a request not scheduled since): its last token
	// is fed again for its logits.
	be.fed = 0
	got, _ = d.Propose(context.Background(), []Req{{ID: "b", Tokens: []int32{40, 41, 42}, K: 1}})
	if !slices.Equal(got[0], []int32{43}) || be.fed != 1 {
		t.Errorf("b: draft %v, fed %d", got[0], be.fed)
	}
}

// TestPMin: a draft model unsure of its next token drafts nothing.
func TestPMin(t *testing.T) {
	d, be := newDrafter(t, 16, 0.5, 0)
	be.peak = 1 // p ≈ e/(e+63) ≈ 0.04
	got, _ := d.Propose(context.Background(), []Req{{ID: "a", Tokens: []int32{1, 2}, K: 3}})
	if got[0] != nil {
		t.Errorf("draft %v under p_min 0.5", got[0])
	}
	be.peak = 20
	got, _ = d.Propose(context.Background(), []Req{{ID: "a", Tokens: []int32{1, 2}, K: 3}})
	if len(got[0]) != 3 {
		t.Errorf("draft %v, want 3 tokens", got[0])
	}
}

// TestPoolAndForget: a request the draft cache cannot hold gets no draft;
// Forget gives its blocks back.
func TestPoolAndForget(t *testing.T) {
	d, _ := newDrafter(t, 3, 0, 0)
	got, _ := d.Propose(context.Background(), []Req{{ID: "a", Tokens: make([]int32, 7), K: 2}}) // 8 positions: 2 blocks
	if len(got[0]) != 2 || d.NumFreeBlocks() != 1 {
		t.Fatalf("draft %v, %d free blocks; want 2 tokens and 1", got[0], d.NumFreeBlocks())
	}
	got, _ = d.Propose(context.Background(), []Req{{ID: "b", Tokens: make([]int32, 6), K: 3}}) // 8 positions: no room
	if got[0] != nil {
		t.Errorf("b drafted %v without room", got[0])
	}
	d.Forget("a")
	d.Forget("b")
	if d.NumFreeBlocks() != 3 {
		t.Errorf("%d free blocks after Forget, want 3", d.NumFreeBlocks())
	}
}

// TestCatchUp: a prompt longer than the catch-up budget is fed over
// several calls and drafted once it is in.
func TestCatchUp(t *testing.T) {
	d, be := newDrafter(t, 64, 0, 8)
	long := make([]int32, 20)
	for i := range long {
		long[i] = int32(i)
	}
	var drafts [][]int32
	for range 4 {
		got, _ := d.Propose(context.Background(), []Req{{ID: "a", Tokens: long, K: 2}})
		drafts = append(drafts, got[0])
	}
	if drafts[0] != nil || drafts[1] != nil || !slices.Equal(drafts[2], []int32{20, 21}) {
		t.Errorf("drafts by call %v: want none, none, then [20 21]", drafts)
	}
	// 8, 8, then 4 and the first draft token; the fourth call feeds the
	// last real token again (for its logits) and its first draft token.
	if be.fed != 8+8+4+1+1+1 {
		t.Errorf("fed %d tokens", be.fed)
	}
}
