package structured

/*
#cgo CFLAGS: -I${SRCDIR}/../../.cache/llguidance/include
#cgo LDFLAGS: ${SRCDIR}/../../.cache/llguidance/lib/libtandem_llg.a -lm -ldl -lpthread
#include <stdlib.h>
#include <string.h>
#include "llguidance.h"

static LlgTokenizer *tandem_new_tokenizer(uint32_t vocab, const uint32_t *lens, const uint8_t *bytes,
		const uint32_t *eos, uint32_t neos, char *err, size_t errlen) {
	LlgTokenizerInitV2 init;
	memset(&init, 0, sizeof init);
	init.struct_size = sizeof init;
	init.vocab_size = vocab;
	init.tok_eos = eos[0];
	init.tok_eos_extra = neos > 1 ? eos + 1 : NULL;
	init.tok_eos_extra_count = neos > 1 ? neos - 1 : 0;
	init.token_lens = lens;
	init.token_bytes = bytes;
	init.use_approximate_greedy_tokenize_fn = true;
	return llg_new_tokenizer_v2(&init, err, errlen);
}

static LlgMatcher *tandem_new_matcher(const LlgTokenizer *tok, const char *kind, const char *data) {
	LlgConstraintInit init;
	memset(&init, 0, sizeof init);
	llg_constraint_init_set_defaults(&init, tok);
	init.log_stderr_level = 0;
	init.log_buffer_level = 0;
	return llg_new_matcher(&init, kind, data);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"
)

// ErrInvalid wraps every constraint that does not compile: a schema
// keyword, regex or grammar LLGuidance does not support, or a malformed
// one. The message names the offending part.
var ErrInvalid = errors.New("structured: invalid constraint")

// Vocab is a model's vocabulary as the matcher sees it. Safe for
// concurrent use; Close it when the model goes.
type Vocab struct {
	tok  *C.LlgTokenizer
	size int
	eos  []int32
}

// specialMarker starts the bytes of a special token: LLGuidance's
// convention (toktrie), so that no text a constraint allows spells one.
const specialMarker = 0xFF

// NewVocab builds the vocabulary from each token id's bytes, which of
// them are special (control) tokens, and the ids that end generation
// (at least one).
func NewVocab(tokens [][]byte, special []bool, eos []int32) (*Vocab, error) {
	if len(tokens) == 0 || len(eos) == 0 {
		return nil, fmt.Errorf("structured: a vocabulary needs tokens and an EOS id")
	}
	lens := make([]C.uint32_t, len(tokens))
	var data []byte
	for i, b := range tokens {
		if i < len(special) && special[i] {
			data = append(data, specialMarker)
			data = append(data, b...)
			lens[i] = C.uint32_t(len(b) + 1)
			continue
		}
		data = append(data, b...)
		lens[i] = C.uint32_t(len(b))
	}
	ceos := make([]C.uint32_t, len(eos))
	for i, id := range eos {
		if id < 0 || int(id) >= len(tokens) {
			return nil, fmt.Errorf("structured: EOS id %d outside the vocabulary of %d", id, len(tokens))
		}
		ceos[i] = C.uint32_t(id)
	}
	if len(data) == 0 {
		data = []byte{0}
	}
	cdata := C.CBytes(data)
	defer C.free(cdata)
	var errBuf [512]C.char
	tok := C.tandem_new_tokenizer(C.uint32_t(len(tokens)), &lens[0], (*C.uint8_t)(cdata), &ceos[0], C.uint32_t(len(ceos)),
		&errBuf[0], C.size_t(len(errBuf)))
	if tok == nil {
		return nil, fmt.Errorf("structured: vocabulary: %s", C.GoString(&errBuf[0]))
	}
	v := &Vocab{tok: tok, size: len(tokens), eos: slices.Clone(eos)}
	runtime.SetFinalizer(v, (*Vocab).Close)
	return v, nil
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }

// MaskWords is the length of a mask: one bit per token id, 32 per word.
func (v *Vocab) MaskWords() int { return (v.size + 31) / 32 }

// Close frees the vocabulary; matchers compiled from it stay valid.
func (v *Vocab) Close() {
	if v.tok != nil {
		C.llg_free_tokenizer(v.tok)
		v.tok = nil
	}
}

// Matcher is one request's constraint state. Not safe for concurrent use.
type Matcher struct {
	m     *C.LlgMatcher
	words int
	eos   []int32
}

// Compile compiles c against the vocabulary. A constraint LLGuidance
// cannot compile is an error wrapping ErrInvalid with its message.
func (v *Vocab) Compile(c Constraint) (*Matcher, error) {
	kind, data, err := c.llg()
	if err != nil {
		return nil, err
	}
	ckind, cdata := C.CString(kind), C.CString(data)
	defer C.free(unsafe.Pointer(ckind))
	defer C.free(unsafe.Pointer(cdata))
	m := C.tandem_new_matcher(v.tok, ckind, cdata)
	if m == nil {
		return nil, fmt.Errorf("%w: the matcher could not be created", ErrInvalid)
	}
	mt := &Matcher{m: m, words: v.MaskWords(), eos: v.eos}
	runtime.SetFinalizer(mt, (*Matcher).Close)
	if C.llg_matcher_is_error(m) {
		err := fmt.Errorf("%w: %s", ErrInvalid, C.GoString(C.llg_matcher_get_error(m)))
		mt.Close()
		return nil, err
	}
	return mt, nil
}

// Clone returns an independent copy of m in its current state (a
// compiled constraint reused for another request costs a copy, not a
// compile).
func (m *Matcher) Clone() *Matcher {
	c := &Matcher{m: C.llg_clone_matcher(m.m), words: m.words, eos: m.eos}
	runtime.SetFinalizer(c, (*Matcher).Close)
	return c
}

// FillMask writes the tokens allowed next into mask (MaskWords words; bit
// t%32 of word t/32 set: token t allowed). Once the constraint is
// complete only the EOS ids are allowed.
func (m *Matcher) FillMask(mask []uint32) error {
	if len(mask) < m.words {
		return fmt.Errorf("structured: mask of %d words, want %d", len(mask), m.words)
	}
	if C.llg_matcher_compute_mask_into(m.m, (*C.uint32_t)(unsafe.Pointer(&mask[0])), C.size_t(4*m.words)) != 0 {
		return m.err()
	}
	return nil
}

// Accept advances the matcher by the token sampled; a token the mask did
// not allow is an error. After the constraint ended (Done) only an EOS id
// is accepted, and changes nothing.
func (m *Matcher) Accept(tok int32) error {
	if m.Done() && !m.isError() {
		if slices.Contains(m.eos, tok) {
			return nil
		}
		return fmt.Errorf("structured: token %d after the constraint ended", tok)
	}
	if tok < 0 || C.llg_matcher_consume_token(m.m, C.uint32_t(tok)) != 0 {
		return m.err()
	}
	return nil
}

func (m *Matcher) isError() bool { return bool(C.llg_matcher_is_error(m.m)) }

// Done reports whether the constraint has ended (completed after an EOS,
// or failed).
func (m *Matcher) Done() bool { return bool(C.llg_matcher_is_stopped(m.m)) }

// Accepting reports whether the output so far is complete under the
// constraint (an EOS may come now).
func (m *Matcher) Accepting() bool { return bool(C.llg_matcher_is_accepting(m.m)) }

// Close frees the matcher. Idempotent.
func (m *Matcher) Close() {
	if m.m != nil {
		C.llg_free_matcher(m.m)
		m.m = nil
	}
}

func (m *Matcher) err() error {
	if p := C.llg_matcher_get_error(m.m); p != nil {
		return fmt.Errorf("structured: %s", C.GoString(p))
	}
	return fmt.Errorf("structured: matcher failed")
}
