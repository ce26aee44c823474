package tokenizer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// eogTexts are the texts of tokens that end generation, recognised by text
// as llama.cpp does (special_eog_ids).
var eogTexts = []string{
	"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
	"<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "<end_of_utterance>",
}

// finish derives the lookup tables from texts, kinds and the loaders'
// settings, and builds the merge table from merges (in rank order). Loaders
// set style, algo, texts, kinds, scores and the flags first.
func (t *BPE) finish(merges [][2]string, added []addedToken, extraStops []int32) error {
	if len(t.texts) == 0 {
		return fmt.Errorf("%w: empty vocabulary", ErrInvalid)
	}
	for _, id := range append(append([]int32(nil), t.prefix...), t.suffix...) {
		if id < 0 || int(id) >= len(t.texts) {
			return fmt.Errorf("%w: special token id %d added to every prompt is outside the vocabulary of %d", ErrInvalid, id, len(t.texts))
		}
	}
	build := t.ids == nil // FromHFDir passes the vocabulary's own map
	if build {
		t.ids = make(map[string]int32, len(t.texts))
	}
	for id, text := range t.texts {
		if t.kinds[id] == kindNormal && t.style == styleSentencePiece {
			if _, ok := gguf.ByteToken(text); ok {
				t.kinds[id] = kindByte
			}
		}
		if build && text != "" {
			t.ids[text] = int32(id)
		}
	}
	if t.ignoreMerges {
		t.wordIDs = make(map[string]int32, len(t.texts))
	}
	t.buildPieces()
	for b := range 256 {
		var id int32
		var ok bool
		if t.style == styleByteLevel {
			id, ok = t.ids[string(gguf.ByteRunes[b])]
		} else if id, ok = t.ids[fmt.Sprintf("<0x%02X>", b)]; !ok && b < 0x80 {
			id, ok = t.ids[string(rune(b))]
		}
		t.byteIDs[b], t.hasByteID[b] = id, ok
	}
	if t.algo == algoRanks {
		t.merges = make(map[uint64]mergeRule, len(merges))
		var buf []byte
		for rank, m := range merges {
			a, okA := t.ids[m[0]]
			b, okB := t.ids[m[1]]
			buf = append(append(buf[:0], m[0]...), m[1]...)
			c, okC := t.ids[string(buf)] // no allocation: the compiler converts in place
			if !okA || !okB || !okC {
				continue
			}
			if _, dup := t.merges[pairKey(a, b)]; !dup {
				t.merges[pairKey(a, b)] = mergeRule{rank: int32(rank), id: c}
			}
		}
	}
	t.added = newAddedSet(added)
	t.buildStops(extraStops)
	return nil
}

// buildPieces fills pieceData and pieceEnd with what each token stands for,
// and wordIDs (when set) with the normal tokens by what they stand for.
func (t *BPE) buildPieces() {
	t.pieceEnd = make([]uint32, len(t.texts))
	data := make([]byte, 0, 4*len(t.texts))
	for id, text := range t.texts {
		start := len(data)
		switch t.kinds[id] {
		case kindUnused:
		case kindByte:
			if b, ok := gguf.ByteToken(text); ok {
				data = append(data, b)
			} else {
				data = append(data, text...)
			}
		case kindNormal:
			ok := true
			if t.style == styleByteLevel {
				if data, ok = gguf.AppendByteLevel(data, text); !ok {
					data = append(data, text...) // HF ByteLevel keeps such a token's text
				}
			} else {
				data = append(data, strings.ReplaceAll(text, spmSpace, " ")...)
			}
			if t.wordIDs != nil && ok {
				if t.style == styleByteLevel {
					t.wordIDs[string(data[start:])] = int32(id)
				} else {
					t.wordIDs[text] = int32(id)
				}
			}
		default:
			if t.addedSpaces {
				text = strings.ReplaceAll(text, spmSpace, " ")
			}
			data = append(data, text...)
		}
		t.pieceEnd[id] = uint32(len(data))
	}
	t.pieceData = data
}

// buildStops sets the ids that end generation: EOS, then extra (EOT, EOM,
// generation_config), then the end-of-turn tokens found by text, without
// duplicates. Like llama.cpp, <|end|> is not a stop when <|return|> and
// <|call|> exist (gpt-oss).
func (t *BPE) buildStops(extra []int32) {
	var stops []int32
	add := func(id int32) {
		if t.valid(id) && !slices.Contains(stops, id) {
			stops = append(stops, id)
		}
	}
	if t.hasEOS {
		add(t.eos)
	}
	for _, id := range extra {
		add(id)
	}
	_, harmonyReturn := t.ids["<|return|>"]
	_, harmonyCall := t.ids["<|call|>"]
	for _, text := range eogTexts {
		if text == "<|end|>" && harmonyReturn && harmonyCall {
			continue
		}
		if id, ok := t.ids[text]; ok && t.kinds[id] != kindNormal {
			add(id)
		}
	}
	t.stops = stops
}
