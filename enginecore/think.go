package enginecore

import (
	"bytes"

	"github.com/tandem-llm/tandem/wire"
)

// Thinking before a constraint: a constrained request whose sampling
// parameters name think tags (_tandem_reasoning_start/_end, which a
// frontend with a reasoning parser sets) samples freely while it thinks,
// and its constraint applies from the token after the end tag, as vLLM's
// structured outputs wait for reasoning_ended. Two gates, as vLLM's
// should_fill_bitmask and should_advance: inside the block no mask is
// filled and the matcher does not advance; the token that ends the block
// does not advance it either. When the answer only may open the block,
// its first token is the start tag or one the constraint allows: the
// mask allows both, and the token sampled decides.

// maxThinkTag bounds each think tag, bytes: the gate keeps fewer than
// this many bytes of the answer to find the end tag across tokens.
const maxThinkTag = 64

// thinkPhase is where a gated answer is.
type thinkPhase int

const (
	thinkMayOpen thinkPhase = iota // the first token: the start tag opens the block, another one starts the constrained answer
	thinkInside                    // in the block: no mask, the matcher waits
)

// thinkGate holds one request's constraint back while it thinks. It is
// pure: step takes each sampled token and its bytes.
type thinkGate struct {
	phase   thinkPhase
	startID int32  // the start tag's token (thinkMayOpen)
	end     []byte // the end tag
	tail    []byte // the answer's last bytes, fewer than len(end): where the end tag may have begun
}

// newThinkGate is the gate p asks for, nil when the constraint applies
// from the answer's first token: no end tag, or a start tag that is not
// one token of the vocabulary (tokenOf), which the mask cannot offer
// beside the constraint's tokens.
func newThinkGate(p *wire.SamplingParams, tokenOf func(piece string) (int32, bool)) *thinkGate {
	if p.ReasoningEnd == "" {
		return nil
	}
	g := &thinkGate{phase: thinkInside, end: []byte(p.ReasoningEnd)}
	if p.ReasoningStart != "" {
		id, ok := tokenOf(p.ReasoningStart)
		if !ok {
			return nil
		}
		g.phase, g.startID = thinkMayOpen, id
	}
	return g
}

// masks reports whether the constraint's mask applies to this step's
// token (with allow added to it).
func (g *thinkGate) masks() bool { return g.phase != thinkInside }

// allow adds the start tag to the constraint's mask [ceil(V/32)] while
// the answer may open the block.
func (g *thinkGate) allow(mask []uint32) {
	if g.phase == thinkMayOpen && int(g.startID/32) < len(mask) {
		mask[g.startID/32] |= 1 << (g.startID % 32)
	}
}

// step takes the token sampled (its bytes piece): open says the gate is
// done (the constraint applies from now on), accept that the matcher takes
// this token.
func (g *thinkGate) step(tok int32, piece []byte) (open, accept bool) {
	switch g.phase {
	case thinkMayOpen:
		if tok == g.startID {
			g.phase = thinkInside
			return false, false
		}
		return true, true // an answer without the block: constrained from its first token
	default:
		g.tail = append(g.tail, piece...)
		if bytes.Contains(g.tail, g.end) {
			return true, false // the end tag: the constraint takes the next token
		}
		if keep := len(g.end) - 1; len(g.tail) > keep {
			g.tail = append(g.tail[:0], g.tail[len(g.tail)-keep:]...)
		}
		return false, false
	}
}

// tokenOf returns the token whose bytes are exactly piece (the first
// one), remembered per piece: a request's start tag costs one scan of the
// vocabulary per engine.
func (e *Engine) tokenOf(piece string) (int32, bool) {
	if id, seen := e.singleTokens[piece]; seen {
		return id, id >= 0
	}
	id := int32(-1)
	if v := e.cfg.Vocab; v != nil {
		for i, p := range v.Pieces {
			if string(p) == piece {
				id = int32(i)
				break
			}
		}
	}
	if len(e.singleTokens) >= maxSingleTokens {
		clear(e.singleTokens)
	}
	e.singleTokens[piece] = id
	return id, id >= 0
}

// maxSingleTokens bounds tokenOf's memory: tags are few (one or two per
// reasoning parser), so the map is cleared if clients send many.
const maxSingleTokens = 64
