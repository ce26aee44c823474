package tokenizer

import (
	"fmt"
	"slices"
	"strings"
)

// byteRunes maps each byte to its printable character in byte-level
// vocabularies (GPT-2's bytes_to_unicode): printable Latin-1 bytes stand for
// themselves, the other 68 are shifted to U+0100 and up in byte order.
var byteRunes, runeBytes = func() (br [256]rune, rb [256 + 68]int16) {
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

// appendByteLevel appends the bytes the characters of a byte-level token
// stand for; ok is false (and dst unchanged) when a character is outside the
// mapping.
func appendByteLevel(dst []byte, text string) (_ []byte, ok bool) {
	n := len(dst)
	for _, r := range text {
		if r < 0 || int(r) >= len(runeBytes) || runeBytes[r] < 0 {
			return dst[:n], false
		}
		dst = append(dst, byte(runeBytes[r]))
	}
	return dst, true
}

// byteToken parses a byte token's text, <0xNN>.
func byteToken(text string) (byte, bool) {
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
	build := t.ids == nil // FromHFDir passes the vocabulary's own map
	if build {
		t.ids = make(map[string]int32, len(t.texts))
	}
	for id, text := range t.texts {
		if t.kinds[id] == kindNormal && t.style == styleSentencePiece {
			if _, ok := byteToken(text); ok {
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
			id, ok = t.ids[string(byteRunes[b])]
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
			if b, ok := byteToken(text); ok {
				data = append(data, b)
			} else {
				data = append(data, text...)
			}
		case kindNormal:
			ok := true
			if t.style == styleByteLevel {
				if data, ok = appendByteLevel(data, text); !ok {
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
