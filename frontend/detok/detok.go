package detok

import (
	"strings"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// replacement is U+FFFD, written for each maximal invalid UTF-8 subpart.
const replacement = "\uFFFD"

// Detokenizer turns a growing list of output token ids into text deltas that
// are always valid UTF-8. Build it with New; it is not safe for concurrent use.
type Detokenizer struct {
	tok         tokenizer.Tokenizer
	skipSpecial bool
	pending     []byte // bytes not yet emitted: an incomplete UTF-8 prefix (≤ 3 bytes) between calls
}

// New returns a Detokenizer over tok. skipSpecial drops special tokens (such
// as EOS) from the text, as skip_special_tokens does.
func New(tok tokenizer.Tokenizer, skipSpecial bool) *Detokenizer {
	return &Detokenizer{tok: tok, skipSpecial: skipSpecial, pending: make([]byte, 0, 64)}
}

// Add appends the token ids that were generated next and returns the new text:
// every complete character so far, holding back the bytes of a trailing
// incomplete UTF-8 sequence. Ids outside the vocabulary are skipped. ids is not
// retained.
func (d *Detokenizer) Add(ids []int32) string {
	for _, id := range ids {
		if d.skipSpecial && d.tok.IsSpecial(id) {
			continue
		}
		if b, ok := d.tok.TokenBytes(id); ok {
			d.pending = append(d.pending, b...)
		}
	}
	return d.drain(false)
}

// Flush returns the held-back bytes at the end of generation: an incomplete
// sequence becomes U+FFFD. The Detokenizer is empty afterwards.
func (d *Detokenizer) Flush() string { return d.drain(true) }

// drain converts the complete part of pending to text and keeps the rest;
// final converts everything.
func (d *Detokenizer) drain(final bool) string {
	p := d.pending
	// Fast path: all ASCII, the common case for the byte tokenizer.
	ascii := true
	for _, c := range p {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		d.pending = p[:0]
		return string(p)
	}
	var b strings.Builder
	b.Grow(len(p) + len(replacement))
	i := 0
	for i < len(p) {
		n, st := scanSeq(p[i:])
		switch st {
		case seqValid:
			b.Write(p[i : i+n])
		case seqInvalid:
			b.WriteString(replacement)
		case seqIncomplete:
			if !final {
				d.pending = append(p[:0], p[i:]...)
				return b.String()
			}
			b.WriteString(replacement)
		}
		i += n
	}
	d.pending = p[:0]
	return b.String()
}

// Text detokenizes ids in one go: New(tok, skipSpecial).Add(ids) + Flush().
func Text(tok tokenizer.Tokenizer, ids []int32, skipSpecial bool) string {
	d := New(tok, skipSpecial)
	return d.Add(ids) + d.Flush()
}
