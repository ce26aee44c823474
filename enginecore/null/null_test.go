package null_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/null"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

func TestNewScript(t *testing.T) {
	bytePieces := make([][]byte, 260)
	for i := range 256 {
		bytePieces[i] = []byte{byte(i)}
	}
	tests := []struct {
		name   string
		pieces [][]byte
		vocab  int
		text   string
		eos    []int32
		want   []int32
	}{
		{"bytes", bytePieces, 260, "ab c", nil, []int32{'a', 'b', ' ', 'c'}},
		{"sentencepiece space", [][]byte{[]byte("x"), []byte("▁"), []byte("y")}, 3, "x y", nil, []int32{0, 1, 2}},
		{"byte-level space", [][]byte{[]byte("Ġ"), []byte("x")}, 2, " x?", nil, []int32{0, 1}},
		{"eos piece skipped", [][]byte{[]byte("a"), []byte("a")}, 2, "a", []int32{0}, []int32{1}},
		{"no piece: every id but eos", nil, 4, "abc", []int32{2}, []int32{0, 1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := null.NewScript(tt.pieces, tt.vocab, tt.text, tt.eos)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NewScript (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForward(t *testing.T) {
	const v = 8
	b, err := null.New(runner.ModelInfo{VocabSize: v}, []int32{3, 5, 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Forward(context.Background(), &runner.Step{}, nil); err == nil {
		t.Error("Forward before AllocateKV: no error")
	}
	if err := b.AllocateKV(4, 16); err != nil {
		t.Fatal(err)
	}
	step := &runner.Step{Seqs: []runner.Seq{
		{Len: 4, ContextLen: 4, PromptLen: 4, Logits: true}, // prefill: token 0 of the script
		{Len: 2, ContextLen: 2, PromptLen: 6},               // a chunk, no logits
		{Len: 1, ContextLen: 9, PromptLen: 4, Logits: true}, // 5 generated: token 5 mod 3
	}}
	logits := make([]float32, 2*v)
	for i := range logits {
		logits[i] = -1 // stale values must go
	}
	if err := b.Forward(context.Background(), step, logits); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 2*v)
	want[3], want[v+7] = null.Margin, null.Margin
	if diff := cmp.Diff(want, logits); diff != "" {
		t.Errorf("logits (-want +got):\n%s", diff)
	}
	if b.NumForward() != 1 {
		t.Errorf("NumForward = %d, want 1", b.NumForward())
	}
}

func TestNewRejects(t *testing.T) {
	for name, script := range map[string][]int32{"empty": nil, "outside": {0, 9}, "negative": {-1}} {
		if _, err := null.New(runner.ModelInfo{VocabSize: 9}, script); err == nil {
			t.Errorf("%s: New(%v) gave no error", name, script)
		}
	}
	if _, err := null.NewPaced(runner.ModelInfo{VocabSize: 9}, []int32{1}, -time.Millisecond); err == nil {
		t.Error("NewPaced with a negative step time gave no error")
	}
}

func TestFailAfter(t *testing.T) {
	b, err := null.New(runner.ModelInfo{VocabSize: 8}, []int32{3})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AllocateKV(4, 16); err != nil {
		t.Fatal(err)
	}
	ctx, step := context.Background(), &runner.Step{}
	_ = b.Forward(ctx, step, nil) // before FailAfter: not counted
	b.FailAfter(2)
	var got []bool
	for range 4 {
		got = append(got, errors.Is(b.Forward(ctx, step, nil), null.ErrInjected))
	}
	if diff := cmp.Diff([]bool{false, false, true, true}, got); diff != "" {
		t.Errorf("failed passes (-want +got):\n%s", diff)
	}
	b.FailAfter(0)
	if err := b.Forward(ctx, step, nil); err != nil {
		t.Errorf("FailAfter(0): %v", err)
	}
}
