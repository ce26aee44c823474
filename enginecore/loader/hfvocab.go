package loader

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// hfTokenizer is what hfVocab reads of tokenizer.json.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type  string          `json:"type"`
		Vocab json.RawMessage `json:"vocab"`
	} `json:"model"`
}

// hfVocab reads what each token id stands for from dir's tokenizer.json,
// for constrained decoding: a BPE model's vocabulary, byte-level (GPT-2,
// Llama 3, Qwen: each character stands for a byte) or SentencePiece-like
// (Llama 2, Mistral: ▁ is a space, <0xNN> a byte), and the added tokens
// (special ones marked). Ids up to vocabSize that the tokenizer does not
// name become special placeholders no constraint can spell. It fails for
// a tokenizer it does not read (Unigram, WordPiece); structured outputs
// are then unavailable, as with a GGUF of another tokenizer.
func hfVocab(dir string, vocabSize int) (*gguf.Vocab, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	var tj hfTokenizer
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q: only BPE vocabularies are read", tj.Model.Type)
	}
	var vocab map[string]int
	if err := json.Unmarshal(tj.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
	}
	byteLevel := strings.Contains(string(tj.Decoder), `"ByteLevel"`) || strings.Contains(string(tj.PreTokenizer), `"ByteLevel"`)
	n := vocabSize
	for _, id := range vocab {
		n = max(n, id+1)
	}
	for _, t := range tj.AddedTokens {
		n = max(n, t.ID+1)
	}
	if n > vocabSize {
		return nil, fmt.Errorf("tokenizer.json: token id %d is outside the model's %d embedding rows", n-1, vocabSize)
	}
	v := &gguf.Vocab{Pieces: make([][]byte, n), Special: make([]bool, n), Texts: make([]string, n)}
	for text, id := range vocab {
		v.Texts[id] = text
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: token %q has id %d", text, id)
		}
		switch b, isByte := gguf.ByteToken(text); {
		case byteLevel:
			if p, ok := gguf.AppendByteLevel(nil, text); ok {
				v.Pieces[id] = p
			} else {
				v.Pieces[id] = []byte(text)
			}
		case isByte:
			v.Pieces[id] = []byte{b}
		default:
			v.Pieces[id] = []byte(strings.ReplaceAll(text, "\u2581", " "))
		}
	}
	for _, t := range tj.AddedTokens {
		if t.ID < 0 {
			return nil, fmt.Errorf("tokenizer.json: added token %q has id %d", t.Content, t.ID)
		}
		v.Pieces[t.ID], v.Special[t.ID], v.Texts[t.ID] = []byte(t.Content), t.Special, t.Content
	}
	for id, p := range v.Pieces {
		if p == nil {
			v.Pieces[id], v.Special[id] = fmt.Appendf(nil, "<|tandem_unused_%d|>", id), true
		}
	}
	return v, nil
}
