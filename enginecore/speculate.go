package enginecore

import (
	"context"
	"fmt"

	"github.com/tandem-llm/tandem/enginecore/drafter"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/enginecore/spec"
)

// Speculative decoding (docs/architecture.md#speculative-decoding): after
// each step the engine drafts the next tokens of every decoding request,
// with an n-gram proposer (pure) or a draft model (enginecore/drafter),
// and the next Schedule verifies them.

// maxVocabGap is how far a draft model's vocabulary size may be from the
// target's (llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE): fine-tunes of one
// base pad their vocabularies differently.
const maxVocabGap = 128

// newDrafter builds the draft model's drafter, its KV cache as many
// blocks as the engine's plus room for every running request's draft.
func newDrafter(cfg Config, be runner.Backend) (*drafter.Drafter, error) {
	dbe := cfg.DraftBackend
	if dbe == nil {
		return nil, fmt.Errorf("speculative decoding: method %s without a draft model loaded", cfg.Speculative.Method)
	}
	tv, dv := be.Model().VocabSize, dbe.Model().VocabSize
	if d := tv - dv; d > maxVocabGap || -d > maxVocabGap {
		return nil, fmt.Errorf("speculative decoding: the draft model's vocabulary (%d tokens) is not the model's (%d)", dv, tv)
	}
	if tb, db := be.Model().BOSTokenID, dbe.Model().BOSTokenID; tb != db {
		return nil, fmt.Errorf("speculative decoding: the draft model's BOS token %d is not the model's %d: another tokenizer", db, tb)
	}
	perSeq := (cfg.Speculative.NumSpeculativeTokens + cfg.BlockSize - 1) / cfg.BlockSize
	return drafter.New(dbe, drafter.Config{NumBlocks: cfg.NumBlocks + max(cfg.MaxNumSeqs, 1)*perSeq, BlockSize: cfg.BlockSize,
		PMin: cfg.Speculative.PMin, CatchUp: max(cfg.MaxNumBatchedTokens, 256), MaxToken: int32(min(tv, dv) - 1)})
}

// minDraft is the scheduler's MinDraft of sc.
func minDraft(sc *spec.Config) int {
	if sc == nil {
		return 0
	}
	return sc.MinDraft
}

// draft proposes the next step's speculative tokens: for every decoding
// request but those under a structured-output constraint (whose mask
// holds for one position at a time) or followed through a think block
// (think.go: one token at a time). A draft model that fails is logged
// and switched off: the engine goes on without drafts.
func (e *Engine) draft(ctx context.Context) {
	skip := func(r *sched.Request) bool { return e.constraints[r.ID] != nil || e.thinking[r.ID] != nil }
	switch {
	case e.propose != nil:
		e.sched.Draft(func(r *sched.Request, k int) []int32 {
			if skip(r) {
				return nil
			}
			return e.propose.Propose(r.Tokens(), k)
		})
	case e.drafter != nil:
		var slots []sched.Slot
		var reqs []drafter.Req
		for _, sl := range e.sched.Drafting() {
			if !skip(sl.Req) {
				slots = append(slots, sl)
				reqs = append(reqs, drafter.Req{ID: sl.Req.ID, Tokens: sl.Req.Tokens(), K: sl.K})
			}
		}
		if len(reqs) == 0 {
			return
		}
		drafts, err := e.drafter.Propose(ctx, reqs)
		if err != nil {
			e.log.Error("draft model failed; speculative decoding is off from now", "err", err)
			e.drafter = nil
			return
		}
		for i, sl := range slots {
			e.sched.SetDraft(sl, drafts[i])
		}
	}
}
