package runner

import (
	"errors"
	"fmt"
)

// ErrInvalidStep is a Step that does not fit its backend (wrapped, with the
// reason, by Validate).
var ErrInvalidStep = errors.New("invalid step")

// Limits are what a backend can hold.
type Limits struct {
	VocabSize  int // V
	NumBlocks  int // blocks in the KV pool
	BlockSize  int // B, tokens per block
	MaxContext int // positions the model supports; 0 = no limit of its own
	Dim        int // hidden size of Step.Hidden rows; 0 = the backend writes none
}

// Shape is what a valid Step needs of its backend.
type Shape struct {
	NumRows   int // logits rows: Σ the Seqs' LogitRows
	MaxCtx    int // the longest attention span, positions
	MaxBlocks int // the longest block table in use (at least 1)
	NumHidden int // hidden-state rows: Σ the Seqs' HiddenRowsOf
}

// Validate checks that st fits l and a logits buffer of numLogits values:
// every token belongs to exactly one Seq, in order; token ids are in the
// vocabulary; positions lie within their Seq's context, the model's
// context and block table; each slot is the one the block table gives;
// block ids are in the pool. It allocates only to report an error, so
// backends run it on every Forward.
func (st *Step) Validate(l Limits, numLogits int) (Shape, error) {
	var sh Shape
	numTok := len(st.TokenIDs)
	if len(st.Positions) != numTok || len(st.SlotMapping) != numTok {
		return sh, fmt.Errorf("%w: %d tokens, %d positions, %d slots", ErrInvalidStep, numTok, len(st.Positions), len(st.SlotMapping))
	}
	bs := l.BlockSize
	next := 0 // first token not yet claimed by a Seq
	for si := range st.Seqs {
		s := &st.Seqs[si]
		if s.Start != next || s.Len < 1 || s.Start+s.Len > numTok {
			return sh, fmt.Errorf("%w: seq %d spans [%d,+%d), want start %d within %d tokens", ErrInvalidStep, si, s.Start, s.Len, next, numTok)
		}
		next = s.Start + s.Len
		_, numRows := s.LogitRows()
		sh.NumRows += numRows
		_, numHidden := s.HiddenRowsOf()
		sh.NumHidden += numHidden
		for t := s.Start; t < next; t++ {
			id, pos, slot := st.TokenIDs[t], int(st.Positions[t]), int(st.SlotMapping[t])
			if id < 0 || int(id) >= l.VocabSize {
				return sh, fmt.Errorf("%w: token %d has id %d outside vocab of %d", ErrInvalidStep, t, id, l.VocabSize)
			}
			if pos < 0 || pos >= s.ContextLen || l.MaxContext > 0 && pos >= l.MaxContext || pos/bs >= len(s.BlockTable) {
				return sh, fmt.Errorf("%w: token %d at position %d outside context %d / %d blocks of seq %d (model context %d)",
					ErrInvalidStep, t, pos, s.ContextLen, len(s.BlockTable), si, l.MaxContext)
			}
			if want := int(s.BlockTable[pos/bs])*bs + pos%bs; slot != want {
				return sh, fmt.Errorf("%w: token %d at position %d has slot %d, block table says %d", ErrInvalidStep, t, pos, slot, want)
			}
			sh.MaxCtx = max(sh.MaxCtx, pos+1)
		}
		used := min(len(s.BlockTable), (s.ContextLen+bs-1)/bs)
		for i, blk := range s.BlockTable[:used] {
			if blk < 0 || int(blk) >= l.NumBlocks {
				return sh, fmt.Errorf("%w: seq %d block table entry %d is %d, pool has %d blocks", ErrInvalidStep, si, i, blk, l.NumBlocks)
			}
		}
		sh.MaxBlocks = max(sh.MaxBlocks, used)
	}
	if next != numTok {
		return sh, fmt.Errorf("%w: seqs cover %d of %d tokens", ErrInvalidStep, next, numTok)
	}
	if numLogits < sh.NumRows*l.VocabSize {
		return sh, fmt.Errorf("%w: logits hold %d values, need %d rows of %d", ErrInvalidStep, numLogits, sh.NumRows, l.VocabSize)
	}
	switch {
	case sh.NumHidden > 0 && l.Dim == 0:
		return sh, fmt.Errorf("%w: %d hidden-state rows asked of a backend that computes none", ErrInvalidStep, sh.NumHidden)
	case len(st.Hidden) < sh.NumHidden*l.Dim:
		return sh, fmt.Errorf("%w: hidden holds %d values, need %d rows of %d", ErrInvalidStep, len(st.Hidden), sh.NumHidden, l.Dim)
	}
	sh.MaxBlocks = max(sh.MaxBlocks, 1)
	return sh, nil
}
