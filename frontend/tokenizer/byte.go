package tokenizer

import (
	"errors"
	"fmt"
	"strings"
)

// Ids of the dummy model's special tokens.
const (
	byteBOS      int32 = 256 // <|begin_of_text|>
	byteEOS      int32 = 257 // <|end_of_text|>
	byteIMStart  int32 = 258 // <|im_start|>
	byteIMEnd    int32 = 259 // <|im_end|>
	byteReserved int32 = 260 // first <|reserved_N|>
	byteVocab          = 320 // vocabulary size, tokens
)

// specialPrefix and specialSuffix bracket every special-token string of the
// dummy vocabulary.
const (
	specialPrefix = "<|"
	specialSuffix = "|>"
)

// byteTokenizer is the byte-level tokenizer of the dummy model: one token per byte
// plus 64 special tokens. Build it with NewByte.
type byteTokenizer struct {
	vocab         [byteVocab][]byte // token id → bytes; ids ≥ 256 hold special text
	special       map[string]int32  // special text → id
	maxSpecialLen int               // longest special text, bytes
}

// Compile-time check.
var _ Tokenizer = (*byteTokenizer)(nil)

// NewByte returns the dummy model's tokenizer.
func NewByte() Tokenizer {
	t := &byteTokenizer{special: make(map[string]int32, byteVocab-256)}
	for id := range 256 {
		t.vocab[id] = []byte{byte(id)}
	}
	name := func(id int32) string {
		switch id {
		case byteBOS:
			return "<|begin_of_text|>"
		case byteEOS:
			return "<|end_of_text|>"
		case byteIMStart:
			return "<|im_start|>"
		case byteIMEnd:
			return "<|im_end|>"
		default:
			return fmt.Sprintf("<|reserved_%d|>", id-byteReserved)
		}
	}
	for id := int32(256); id < byteVocab; id++ {
		s := name(id)
		t.vocab[id] = []byte(s)
		t.special[s] = id
		t.maxSpecialLen = max(t.maxSpecialLen, len(s))
	}
	return t
}

// Encode implements Tokenizer.
func (t *byteTokenizer) Encode(text string, addSpecial bool) []int32 {
	ids := make([]int32, 0, len(text)+1) // at most one id per byte, plus BOS
	if addSpecial {
		ids = append(ids, byteBOS)
	}
	for len(text) > 0 {
		k := strings.Index(text, specialPrefix)
		if k < 0 {
			return appendBytes(ids, text)
		}
		ids = appendBytes(ids, text[:k])
		text = text[k:]
		if id, n, ok := t.matchSpecial(text); ok {
			ids = append(ids, id)
			text = text[n:]
			continue
		}
		ids = append(ids, int32(text[0]))
		text = text[1:]
	}
	return ids
}

// matchSpecial reports whether text starts with a special-token string and
// returns its id and length in bytes. The search for the closing "|>" is
// bounded by the longest special string, so Encode stays linear.
func (t *byteTokenizer) matchSpecial(text string) (id int32, n int, ok bool) {
	window := text[len(specialPrefix):min(len(text), t.maxSpecialLen)]
	e := strings.Index(window, specialSuffix)
	if e < 0 {
		return 0, 0, false
	}
	n = len(specialPrefix) + e + len(specialSuffix)
	id, ok = t.special[text[:n]]
	return id, n, ok
}

func appendBytes(ids []int32, s string) []int32 {
	for i := range len(s) {
		ids = append(ids, int32(s[i]))
	}
	return ids
}

// Decode implements Tokenizer.
func (t *byteTokenizer) Decode(ids []int32, skipSpecial bool) string {
	buf := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= byteVocab || (skipSpecial && t.IsSpecial(id)) {
			continue
		}
		buf = append(buf, t.vocab[id]...)
	}
	return string(buf)
}

// TokenBytes implements Tokenizer.
func (t *byteTokenizer) TokenBytes(id int32) ([]byte, bool) {
	if id < 0 || id >= byteVocab {
		return nil, false
	}
	return t.vocab[id], true
}

// IsSpecial implements Tokenizer.
func (t *byteTokenizer) IsSpecial(id int32) bool { return id >= 256 && id < byteVocab }

// VocabSize implements Tokenizer.
func (t *byteTokenizer) VocabSize() int { return byteVocab }

// BOS implements Tokenizer.
func (t *byteTokenizer) BOS() (int32, bool) { return byteBOS, true }

// EOS implements Tokenizer.
func (t *byteTokenizer) EOS() []int32 { return []int32{byteEOS, byteIMEnd} }

// ChatTemplate implements Tokenizer.
func (t *byteTokenizer) ChatTemplate() Template { return ChatML{} }

// ErrTemplate is wrapped by every rendering error of the built-in templates.
var ErrTemplate = errors.New("tokenizer: cannot render chat template")
