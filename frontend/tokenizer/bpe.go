package tokenizer

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
)

// Sentinel errors of the loaders.
var (
	// ErrUnsupported is wrapped when a tokenizer uses a model, pre-tokenizer,
	// normalizer or decoder this package does not implement.
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer")
	// ErrInvalid is wrapped when tokenizer metadata is missing or malformed.
	ErrInvalid = errors.New("tokenizer: invalid tokenizer metadata")
)

// tokenKind is a token's type; the values are those of GGUF's
// tokenizer.ggml.token_type.
type tokenKind uint8

const (
	kindNormal      tokenKind = 1
	kindUnknown     tokenKind = 2 // <unk>; special
	kindControl     tokenKind = 3 // BOS, EOS, <|im_start|>…; special
	kindUserDefined tokenKind = 4 // added but not special: split first, always decoded
	kindUnused      tokenKind = 5 // decodes to nothing
	kindByte        tokenKind = 6 // <0xNN>: stands for one byte
)

// textStyle says how the text of a normal token maps to bytes.
type textStyle uint8

const (
	// styleByteLevel: each byte is one printable character (GPT-2's
	// bytes_to_unicode); tokenizer.ggml.model "gpt2", HF ByteLevel.
	styleByteLevel textStyle = iota
	// styleSentencePiece: UTF-8 text with ▁ for a space, and <0xNN> byte
	// tokens for what the vocabulary lacks; "llama", HF byte_fallback BPE.
	styleSentencePiece
)

// mergeAlgo is how a word's characters are merged into tokens.
type mergeAlgo uint8

const (
	// algoRanks applies the merge with the lowest rank first, leftmost on
	// ties (HF BPE, llama.cpp gpt2).
	algoRanks mergeAlgo = iota
	// algoScores merges the adjacent pair whose concatenation is the token
	// with the highest score, leftmost on ties (llama.cpp SPM, "llama").
	algoScores
)

// mergeRule is one BPE merge: the pair's rank (lower merges first) and the
// token it makes.
type mergeRule struct {
	rank int32
	id   int32
}

// EncodeOptions control EncodeWith.
type EncodeOptions struct {
	// AddSpecial adds the BOS/EOS tokens the model's metadata asks for
	// (tokenizer.ggml.add_bos_token; HF add_bos_token or post-processor).
	AddSpecial bool
	// ParseSpecial turns the text of special tokens in the input into their
	// ids. Without it they are encoded as plain text; user-defined (added,
	// non-special) tokens are split out either way. Encode sets it, as HF
	// encode does; llama.cpp's vocab test vectors use it unset.
	ParseSpecial bool
}

// BPE is a byte-pair-encoding tokenizer for real models: byte-level BPE
// (GPT-2, Llama-3, Qwen2/3, SmolLM) and SentencePiece-style BPE with byte
// fallback (Llama-2, Mistral). Build it with FromGGUF or FromHFDir. It is safe
// for concurrent use; SetChatTemplate may be called at any time.
type BPE struct {
	style textStyle
	algo  mergeAlgo

	texts     []string         // id → token text as stored in the vocabulary
	kinds     []tokenKind      // id → kind
	scores    []float32        // id → SentencePiece score; algoScores only
	ids       map[string]int32 // token text → id, every kind
	pieceData []byte           // the bytes of every token (TokenBytes), concatenated
	pieceEnd  []uint32         // id → end of its bytes in pieceData; the start is pieceEnd[id-1]

	merges       map[uint64]mergeRule // algoRanks: left id<<32 | right id → merge
	ignoreMerges bool                 // a word that is a normal token is not merged (Llama-3)
	wordIDs      map[string]int32     // raw word bytes → id of normal tokens; ignoreMerges only
	byteIDs      [256]int32           // byte → its token (byte-level character or <0xNN>)
	hasByteID    [256]bool
	byteFallback bool // a character not in the vocabulary becomes its <0xNN> tokens
	unk          int32
	hasUnk       bool
	fuseUnk      bool // consecutive unknown characters make one <unk>

	added       *addedSet    // added/special tokens, split out before anything else
	normalizers []normalizer // run on each piece of text between added tokens
	splitters   []splitter   // pre-tokenizer steps: piece → words
	stripSpaces int          // Decode drops up to this many leading spaces (SentencePiece prefix)
	// addedSpaces: added tokens decode with ▁ as a space too (HF's
	// SentencePiece decoders run over every token; llama.cpp keeps a
	// user-defined token's text). Gemma's "▁▁" whitespace tokens.
	addedSpaces bool

	prefix, suffix []int32 // ids Encode adds around the text with addSpecial
	bos, eos       int32
	hasBOS, hasEOS bool
	stops          []int32 // ids that end generation; eos first
	chatSource     string  // Jinja source of the chat template; "" when the model has none
	rerankSource   string  // llama.cpp's rerank template ({query}, {document}); "" when none
	sep            []int32 // the separator a query/document pair gets between them (add_sep_token), else nil
	tmpl           atomic.Pointer[tmplBox]

	cache wordCache
}

// Compile-time check.
var _ Tokenizer = (*BPE)(nil)

// Encode implements Tokenizer: special-token text in the input becomes
// special tokens, and addSpecial adds BOS/EOS as the model asks.
func (t *BPE) Encode(text string, addSpecial bool) []int32 {
	return t.EncodeWith(text, EncodeOptions{AddSpecial: addSpecial, ParseSpecial: true})
}

// EncodeWith returns the ids of text under opt.
func (t *BPE) EncodeWith(text string, opt EncodeOptions) []int32 {
	ids := make([]int32, 0, len(text)/3+len(t.prefix)+len(t.suffix)+1) // ~3 bytes per token
	if opt.AddSpecial {
		ids = append(ids, t.prefix...)
	}
	atStart := true
	var words []string
	t.added.split(text, opt.ParseSpecial, func(piece string, id int32, isToken bool) {
		if isToken {
			ids = append(ids, id)
		} else {
			ids, words = t.encodePiece(ids, words, piece, atStart)
		}
		atStart = false
	})
	if opt.AddSpecial {
		ids = append(ids, t.suffix...)
	}
	return ids
}

// encodePiece appends the ids of s, a piece of text between added tokens;
// words is scratch space, returned for reuse.
func (t *BPE) encodePiece(ids []int32, words []string, s string, atStart bool) ([]int32, []string) {
	for _, n := range t.normalizers {
		s = n.normalize(s)
	}
	if s == "" {
		return ids, words
	}
	words = append(words[:0], s)
	var next []string
	for _, sp := range t.splitters {
		next = next[:0]
		for i, w := range words {
			next = sp.split(next, w, atStart && i == 0)
		}
		words, next = next, words
	}
	for _, w := range words {
		ids = t.encodeWord(ids, w)
	}
	return ids, words
}

// encodeWord appends the ids of one pre-tokenized word, from the cache when
// it was seen before.
func (t *BPE) encodeWord(ids []int32, w string) []int32 {
	if cached, ok := t.cache.get(w); ok {
		return append(ids, cached...)
	}
	n := len(ids)
	if t.algo == algoScores {
		ids = t.mergeScores(ids, w)
	} else {
		ids = t.mergeRanks(ids, w)
	}
	t.cache.put(w, ids[n:])
	return ids
}

// Decode implements Tokenizer. A SentencePiece tokenizer that prefixes text
// with a space drops one leading space of the result, as HF's Strip and
// Metaspace decoders do.
func (t *BPE) Decode(ids []int32, skipSpecial bool) string {
	buf := make([]byte, 0, 4*len(ids)) // ~4 bytes per token
	for _, id := range ids {
		if !t.valid(id) || (skipSpecial && t.IsSpecial(id)) {
			continue
		}
		buf = append(buf, t.piece(id)...)
	}
	for n := 0; n < t.stripSpaces && len(buf) > 0 && buf[0] == ' '; n++ {
		buf = buf[1:]
	}
	return string(buf)
}

// TokenBytes implements Tokenizer: a byte token gives its byte, a
// SentencePiece token its text with ▁ as a space, a byte-level token the
// bytes its characters stand for, and an added token its text.
func (t *BPE) TokenBytes(id int32) ([]byte, bool) {
	if !t.valid(id) {
		return nil, false
	}
	return t.piece(id), true
}

func (t *BPE) valid(id int32) bool { return id >= 0 && int(id) < len(t.texts) }

// piece returns the bytes of a valid id; the slice has no spare capacity.
func (t *BPE) piece(id int32) []byte {
	start := uint32(0)
	if id > 0 {
		start = t.pieceEnd[id-1]
	}
	end := t.pieceEnd[id]
	return t.pieceData[start:end:end]
}

// IsSpecial implements Tokenizer: control and unknown tokens are special;
// user-defined added tokens are not.
func (t *BPE) IsSpecial(id int32) bool {
	return t.valid(id) && (t.kinds[id] == kindControl || t.kinds[id] == kindUnknown)
}

// VocabSize implements Tokenizer.
func (t *BPE) VocabSize() int { return len(t.texts) }

// BOS implements Tokenizer.
func (t *BPE) BOS() (int32, bool) { return t.bos, t.hasBOS }

// EOS implements Tokenizer: the EOS token first, then the other tokens that
// end generation (EOT, EOM, generation_config.json's eos_token_id, and the
// end-of-turn tokens llama.cpp recognises by their text: <|eot_id|>,
// <|im_end|>, <|endoftext|>, …).
func (t *BPE) EOS() []int32 { return append([]int32(nil), t.stops...) }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *BPE) AddBOS() bool { return len(t.prefix) > 0 && t.hasBOS && t.prefix[0] == t.bos }

// BOSText returns the text of the BOS token, or "" without one (the Jinja
// variable bos_token).
func (t *BPE) BOSText() string {
	if !t.hasBOS {
		return ""
	}
	return t.texts[t.bos]
}

// EOSText returns the text of the EOS token, or "" without one (the Jinja
// variable eos_token).
func (t *BPE) EOSText() string {
	if !t.hasEOS {
		return ""
	}
	return t.texts[t.eos]
}

// TokenText returns the text of id as the vocabulary stores it (with Ġ or ▁
// for a space), and whether id is in the vocabulary.
func (t *BPE) TokenText(id int32) (string, bool) {
	if !t.valid(id) {
		return "", false
	}
	return t.texts[id], true
}

// wordCache maps pre-tokenized words to their ids. BPE is deterministic, so
// a word seen once never needs merging again; natural text repeats words a lot.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32 // guarded by mu; word → ids
}

const (
	maxCacheWords   = 1 << 16 // entries; the cache is emptied when full
	maxCacheWordLen = 128     // bytes; longer words are not cached
)

func (c *wordCache) get(w string) ([]int32, bool) {
	if len(w) > maxCacheWordLen {
		return nil, false
	}
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	if len(w) > maxCacheWordLen {
		return
	}
	ids = append([]int32(nil), ids...)
	w = strings.Clone(w) // do not retain the caller's text
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheWords {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[w] = ids
	c.mu.Unlock()
}
