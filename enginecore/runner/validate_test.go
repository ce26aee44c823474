package runner

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	lim := Limits{VocabSize: 10, NumBlocks: 4, BlockSize: 2, MaxContext: 8}
	// valid: seq 0 computes positions 2,3 (block 3) and wants logits; seq 1 position 0.
	valid := func() *Step {
		return &Step{
			TokenIDs: []int32{1, 2, 3}, Positions: []int32{2, 3, 0}, SlotMapping: []int32{3*2 + 0, 3*2 + 1, 1*2 + 0},
			Seqs: []Seq{{Start: 0, Len: 2, ContextLen: 4, BlockTable: []int32{0, 3}, Logits: true}, {Start: 2, Len: 1, ContextLen: 1, BlockTable: []int32{1}}},
		}
	}
	sh, err := valid().Validate(lim, 10)
	if err != nil || sh != (Shape{NumRows: 1, MaxCtx: 4, MaxBlocks: 2}) {
		t.Fatalf("valid step: %+v, %v", sh, err)
	}
	tests := []struct {
		name   string
		edit   func(s *Step)
		logits int
		want   string
	}{
		{"slot count", func(s *Step) { s.SlotMapping = s.SlotMapping[:2] }, 10, "3 tokens, 3 positions, 2 slots"},
		{"gap between seqs", func(s *Step) { s.Seqs[1].Start = 3 }, 10, "seq 1 spans"},
		{"token outside the vocabulary", func(s *Step) { s.TokenIDs[2] = 10 }, 10, "outside vocab"},
		{"negative token", func(s *Step) { s.TokenIDs[0] = -1 }, 10, "outside vocab"},
		{"position beyond the context", func(s *Step) { s.Positions[2] = 1 }, 10, "outside context"},
		{"position beyond the model", func(s *Step) {
			s.Positions[2], s.Seqs[1].ContextLen, s.Seqs[1].BlockTable, s.SlotMapping[2] = 8, 9, []int32{0, 0, 0, 0, 1}, 2
		}, 10, "model context 8"},
		{"slot not the block table's", func(s *Step) { s.SlotMapping[1] = 0 }, 10, "block table says 7"},
		{"block outside the pool", func(s *Step) { s.Seqs[1].BlockTable[0], s.SlotMapping[2] = 4, 8 }, 10, "pool has 4 blocks"},
		{"seqs cover too few tokens", func(s *Step) {
			s.TokenIDs, s.Positions, s.SlotMapping = append(s.TokenIDs, 1), append(s.Positions, 1), append(s.SlotMapping, 3)
		}, 10, "cover 3 of 4"},
		{"logits too small", func(*Step) {}, 9, "logits hold 9 values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.edit(s)
			_, err := s.Validate(lim, tt.logits)
			if !errors.Is(err, ErrInvalidStep) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want ErrInvalidStep containing %q", err, tt.want)
			}
		})
	}
}
