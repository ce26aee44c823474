package gguf

import (
	"fmt"
	"strings"
)

// The tokenizer's byte conventions, shared by the frontend's tokenizer
// (frontend/tokenizer) and the engine's constrained decoding (what bytes
// each token id stands for).

// Token types of tokenizer.ggml.token_type, as llama.cpp defines them.
const (
	TokenNormal      = 1
	TokenUnknown     = 2
	TokenControl     = 3
	TokenUserDefined = 4
	TokenUnused      = 5
	TokenByte        = 6 // <0xNN>
)

// ByteRunes maps each byte to its printable character in byte-level
// vocabularies (GPT-2's bytes_to_unicode): printable Latin-1 bytes stand
// for themselves, the other 68 are shifted to U+0100 and up in byte order.
var ByteRunes, runeBytes = func() (br [256]rune, rb [256 + 68]int16) {
	for r := range rb {
		rb[r] = -1
	}
	n := rune(0)
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			br[b] = rune(b)
		} else {
			br[b] = 256 + n
			n++
		}
		rb[br[b]] = int16(b)
	}
	return br, rb
}()

// AppendByteLevel appends the bytes the characters of a byte-level token
// stand for; ok is false (and dst unchanged) when a character is outside
// the mapping.
func AppendByteLevel(dst []byte, text string) (_ []byte, ok bool) {
	n := len(dst)
	for _, r := range text {
		if r < 0 || int(r) >= len(runeBytes) || runeBytes[r] < 0 {
			return dst[:n], false
		}
		dst = append(dst, byte(runeBytes[r]))
	}
	return dst, true
}

// ByteToken parses a byte token's text, <0xNN>.
func ByteToken(text string) (byte, bool) {
	if len(text) != 6 || !strings.HasPrefix(text, "<0x") || text[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(text[3:5]) {
		switch {
		case '0' <= c && c <= '9':
			b = b<<4 | (c - '0')
		case 'A' <= c && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		case 'a' <= c && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

// Vocab is what each token id of a GGUF tokenizer stands for.
type Vocab struct {
	Pieces  [][]byte // [V] the bytes of each token (special ones: their text)
	Special []bool   // [V] control and unknown tokens
	Texts   []string // [V] each token as the vocabulary spells it ("Ġyes", "▁yes", "<0x0A>"); nil: not kept
}

// Vocab reads the vocabulary of tokenizer.ggml.model "gpt2" (byte-level:
// each character stands for a byte) or "llama" (SentencePiece: ▁ is a
// space, <0xNN> a byte).
func (m *Metadata) Vocab() (*Vocab, error) {
	model, _ := m.String("tokenizer.ggml.model")
	if model != "gpt2" && model != "llama" {
		return nil, fmt.Errorf("gguf: tokenizer.ggml.model %q: only gpt2 and llama vocabularies are read", model)
	}
	texts, ok := m.Strings("tokenizer.ggml.tokens")
	if !ok || len(texts) == 0 {
		return nil, fmt.Errorf("gguf: no tokenizer.ggml.tokens")
	}
	types, _ := m.Int32s("tokenizer.ggml.token_type")
	v := &Vocab{Pieces: make([][]byte, len(texts)), Special: make([]bool, len(texts)), Texts: texts}
	for id, text := range texts {
		typ := int32(TokenNormal)
		if id < len(types) {
			typ = types[id]
		}
		switch typ {
		case TokenUnused:
		case TokenByte:
			if b, ok := ByteToken(text); ok {
				v.Pieces[id] = []byte{b}
			} else {
				v.Pieces[id] = []byte(text)
			}
		case TokenControl, TokenUnknown:
			v.Pieces[id], v.Special[id] = []byte(text), true
		case TokenUserDefined:
			v.Pieces[id] = []byte(text)
		default:
			if model == "gpt2" {
				b, ok := AppendByteLevel(nil, text)
				if !ok {
					b = []byte(text)
				}
				v.Pieces[id] = b
			} else {
				v.Pieces[id] = []byte(strings.ReplaceAll(text, "\u2581", " "))
			}
		}
	}
	return v, nil
}
