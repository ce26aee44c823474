package enginecore

import (
	"bytes"
	"unicode/utf8"

	"github.com/tandem-llm/tandem/wire"
)

// Thinking: a request whose sampling parameters name think tags
// (_tandem_reasoning_start/_end, which a frontend with a reasoning parser
// sets) is followed through its think block, token by token, when it has
// a constraint or a thinking budget.
//
//   - A constraint waits for the block's end, as vLLM's structured
//     outputs wait for reasoning_ended. Two gates, as vLLM's
//     should_fill_bitmask and should_advance: inside the block no mask is
//     filled and the matcher does not advance; the token that ends the
//     block does not advance it either. When the answer only may open the
//     block, its first token is the start tag or one the constraint
//     allows: the mask allows both, and the token sampled decides.
//   - A budget (thinking_token_budget, vLLM's; llama.cpp's
//     reasoning_budget_tokens) bounds the tokens sampled inside the block:
//     after that many, the engine completes a UTF-8 character left open,
//     then forces the budget message (llama.cpp's
//     --reasoning-budget-message) and the end tag, one token at a time,
//     as llama.cpp's reasoning budget sampler and vLLM's
//     ThinkingTokenBudgetLogitsProcessor do: each forced token is the
//     longest that spells the next bytes, as a tokenizer would spell them.

// maxThinkTag bounds each think tag, bytes.
const maxThinkTag = 64

// thinkPhase is where an answer is in its think block.
type thinkPhase int

const (
	thinkMayOpen thinkPhase = iota // before the block: the answer may open it
	thinkInside                    // in the block
	thinkClosing                   // the budget is spent: the rest of the message and the end tag are forced
	thinkDone                      // past the block (or there was none): the constraint applies
)

// thinking follows one answer's think block. It is pure: step takes each
// sampled token and its bytes, nextForced says what must come next.
type thinking struct {
	phase       thinkPhase
	constrained bool     // a constraint waits: the start tag must be one token (startID)
	startID     int32    // the start tag's token, -1 when no one token spells it
	start, end  []byte   // the tags
	head        []byte   // thinkMayOpen, unconstrained: the answer so far (blanks, the start tag's beginning)
	tail        []byte   // thinkInside: the answer's last bytes, where the end tag or a UTF-8 character may have begun
	budget      int      // tokens allowed inside the block; -1: no limit
	spent       int      // tokens sampled inside the block
	message     []byte   // forced when the budget is spent, before the end tag
	forced      []byte   // thinkClosing: the bytes still to force
	closeMask   []uint32 // [ceil(V/32)] thinkClosing's mask, allocated on first use
}

// newThinking is the following p asks for, nil when there is none: no
// end tag, nothing that needs it (no constraint, no budget), or a
// constrained answer whose start tag no one token spells (tokenOf), which
// the mask cannot offer beside the constraint's tokens: such an answer is
// constrained from its first token.
func newThinking(p *wire.SamplingParams, constrained bool, tokenOf func(piece string) (int32, bool)) *thinking {
	if p.ReasoningEnd == "" || !constrained && p.ThinkingTokenBudget == nil {
		return nil
	}
	t := &thinking{phase: thinkInside, constrained: constrained, startID: -1, start: []byte(p.ReasoningStart),
		end: []byte(p.ReasoningEnd), budget: -1, message: []byte(p.ReasoningBudgetMessage)}
	if b := p.ThinkingTokenBudget; b != nil {
		t.budget = *b
	}
	if p.ReasoningStart != "" {
		if id, ok := tokenOf(p.ReasoningStart); ok {
			t.startID = id
		} else if constrained {
			return nil
		}
		t.phase = thinkMayOpen
	} else {
		t.checkBudget()
	}
	return t
}

// masks reports whether the constraint's mask applies to this step's
// token: before the block (with the start tag added, allowStart) and
// after it.
func (t *thinking) masks() bool { return t.phase == thinkMayOpen || t.phase == thinkDone }

// allowStart adds the start tag to the constraint's mask [ceil(V/32)]
// while the answer may open the block.
func (t *thinking) allowStart(mask []uint32) {
	if t.phase == thinkMayOpen && t.startID >= 0 && int(t.startID/32) < len(mask) {
		mask[t.startID/32] |= 1 << (t.startID % 32)
	}
}

// step takes the token sampled (its bytes piece) and reports whether the
// constraint's matcher takes it: only before the block, when the answer
// does not open it, and after the block.
func (t *thinking) step(tok int32, piece []byte) (accept bool) {
	switch t.phase {
	case thinkMayOpen:
		if t.startID >= 0 && tok == t.startID {
			t.open(nil)
			return false
		}
		if t.constrained {
			t.phase = thinkDone // an answer without the block: constrained from its first token
			return true
		}
		t.head = append(t.head, piece...)
		trimmed := bytes.TrimLeft(t.head, " \t\r\n")
		switch {
		case bytes.HasPrefix(trimmed, t.start):
			t.open(trimmed[len(t.start):])
		case !bytes.HasPrefix(t.start, trimmed): // neither blanks nor the tag's beginning
			t.phase, t.head = thinkDone, nil
		default: // blanks are dropped: head holds at most the tag's beginning
			t.head = append(t.head[:0:0], trimmed...)
		}
		return false
	case thinkInside:
		t.spent++
		t.see(piece)
		if t.phase == thinkInside {
			t.checkBudget()
		}
		return false
	case thinkClosing:
		t.forced = t.forced[min(len(piece), len(t.forced)):]
		if len(t.forced) == 0 {
			t.phase = thinkDone
		}
		return false
	default:
		return true
	}
}

// open enters the block with rest, the answer's bytes after the start
// tag.
func (t *thinking) open(rest []byte) {
	t.phase, t.head = thinkInside, nil
	t.see(rest)
	if t.phase == thinkInside {
		t.checkBudget()
	}
}

// see adds the answer's next bytes inside the block: the end tag closes
// it.
func (t *thinking) see(b []byte) {
	t.tail = append(t.tail, b...)
	if bytes.Contains(t.tail, t.end) {
		t.phase, t.tail = thinkDone, nil
		return
	}
	if keep := max(len(t.end)-1, utf8.UTFMax-1); len(t.tail) > keep {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-keep:]...)
	}
}

// checkBudget starts forcing the message and the end tag once the budget
// is spent, unless the answer's bytes end inside a UTF-8 character: up to
// three more tokens may complete it (llama.cpp's WAITING_UTF8).
func (t *thinking) checkBudget() {
	if t.budget < 0 || t.spent < t.budget || openUTF8(t.tail) && t.spent < t.budget+utf8.UTFMax-1 {
		return
	}
	t.phase = thinkClosing
	t.forced = append(append([]byte(nil), t.message...), t.end...)
}

// openUTF8 reports whether b ends with the beginning of a UTF-8 character
// that needs more bytes.
func openUTF8(b []byte) bool {
	for i := 1; i <= min(len(b), utf8.UTFMax-1); i++ {
		c := b[len(b)-i]
		switch {
		case c < 0x80:
			return false
		case c >= 0xC0: // a lead byte: how many bytes its character has
			n := 2
			if c >= 0xE0 {
				n = 3
			}
			if c >= 0xF0 {
				n = 4
			}
			return n > i
		}
	}
	return false
}

// nextForced is the token to force next while closing: the longest that
// spells the forced bytes' beginning (byFirst: token ids by their first
// byte; pieces: each token's bytes), as a tokenizer would spell them, so
// the forced text costs few tokens and reads to the model as its own.
// When no token spells them the block is given up (done) and it returns
// -1.
func (t *thinking) nextForced(byFirst *[256][]int32, pieces [][]byte) int32 {
	best, n := int32(-1), 0
	if len(t.forced) > 0 {
		for _, id := range byFirst[t.forced[0]] {
			if p := pieces[id]; len(p) > n && bytes.HasPrefix(t.forced, p) {
				best, n = id, len(p)
			}
		}
	}
	if best < 0 {
		t.phase, t.forced = thinkDone, nil
	}
	return best
}

// tokenOf returns the token whose bytes are exactly piece (the first
// one), looked up among the tokens that begin with its first byte.
func (e *Engine) tokenOf(piece string) (int32, bool) {
	if piece == "" {
		return -1, false
	}
	for _, id := range e.firstBytes()[piece[0]] {
		if string(e.cfg.Vocab.Pieces[id]) == piece {
			return id, true
		}
	}
	return -1, false
}

// firstBytes lists the vocabulary's token ids by their first byte (none
// for empty pieces), built once.
func (e *Engine) firstBytes() *[256][]int32 {
	if e.byFirstByte == nil {
		var by [256][]int32
		for id, p := range e.cfg.Vocab.Pieces {
			if len(p) > 0 {
				by[p[0]] = append(by[p[0]], int32(id))
			}
		}
		e.byFirstByte = &by
	}
	return e.byFirstByte
}
