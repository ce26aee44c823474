package loader

import (
	"testing"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// TestTokenID: a token named as the vocabulary spells it; without the
// spellings, by the bytes it stands for, Ġ and ▁ a space.
func TestTokenID(t *testing.T) {
	spelled := &gguf.Vocab{Pieces: [][]byte{[]byte("y"), []byte(" yes"), []byte("y")}, Texts: []string{"<0x79>", "Ġyes", "y"}}
	bytesOnly := &gguf.Vocab{Pieces: [][]byte{[]byte("no"), []byte(" no"), []byte("x"), []byte("x")}}
	for _, tc := range []struct {
		v    *gguf.Vocab
		tok  string
		want int // -1: an error
	}{
		{spelled, "y", 2}, // the text token, not the byte token of the same byte
		{spelled, "Ġyes", 1},
		{spelled, " yes", -1}, // not a spelling of the vocabulary
		{bytesOnly, "no", 0},
		{bytesOnly, "▁no", 1},
		{bytesOnly, "Ġno", 1},
		{bytesOnly, "x", -1}, // two tokens stand for it
		{bytesOnly, "yes", -1},
	} {
		got, err := tokenID(tc.v, tc.tok)
		if tc.want < 0 && err == nil || tc.want >= 0 && (err != nil || got != tc.want) {
			t.Errorf("tokenID(%q) = %d, %v; want %d", tc.tok, got, err, tc.want)
		}
	}
}
