package detok

import "github.com/tandem-llm/tandem/frontend/tokenizer"

// SequenceConfig is what a request asks of one output sequence's text.
type SequenceConfig struct {
	Stops       []string // stop strings (empty ones are ignored)
	IncludeStop bool     // keep the matched stop string, and the EOS or stop token's text
	SkipSpecial bool     // drop special tokens from the text (skip_special_tokens)
	MinTokens   int      // stop strings count only after this many tokens, as in vLLM
}

// Sequence is one output sequence's text, from the engine's token ids to
// the deltas a client sees: [Detokenizer], the EOS or stop token hidden
// unless IncludeStop, and [StopChecker] after MinTokens. The HTTP server
// and the Go text API (frontend/llm) both use it. Not safe for concurrent
// use.
type Sequence struct {
	cfg    SequenceConfig
	dt     *Detokenizer
	sc     *StopChecker
	numOut int  // tokens pushed
	done   bool // a stop string or the engine ended it
}

// NewSequence returns the text state of one sequence.
func NewSequence(tok tokenizer.Tokenizer, cfg SequenceConfig) *Sequence {
	return &Sequence{cfg: cfg, dt: New(tok, cfg.SkipSpecial), sc: NewStopChecker(cfg.Stops, cfg.IncludeStop)}
}

// Push adds the next token ids the engine produced and returns the text
// to emit now. finished says the engine ended the sequence with them;
// byToken that it ended on an EOS or stop token, the last of ids (vLLM's
// finish reason "stop" from the engine), which is not text unless
// IncludeStop. stopped is
// true, with which stop string, when a stop string ended the sequence:
// the caller then aborts it in the engine. Once stopped or ended, Push
// returns "".
func (s *Sequence) Push(ids []int32, finished, byToken bool) (text string, stopped bool, which string) {
	if s.done {
		return "", false, ""
	}
	textIDs := ids
	if finished && byToken && !s.cfg.IncludeStop && len(textIDs) > 0 {
		textIDs = textIDs[:len(textIDs)-1] // the EOS or stop token is not text
	}
	delta := s.dt.Add(textIDs)
	if finished {
		delta += s.dt.Flush()
	}
	s.numOut += len(ids)
	if s.numOut <= s.cfg.MinTokens {
		text = delta
	} else {
		text, stopped, which = s.sc.Push(delta)
	}
	switch {
	case stopped:
		s.done = true
	case finished:
		text += s.sc.Flush()
		s.done = true
	}
	return text, stopped, which
}

// NumTokens is the number of token ids pushed so far.
func (s *Sequence) NumTokens() int { return s.numOut }
