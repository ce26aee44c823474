package tokenizer

import (
	"fmt"
	"reflect"
	"strings"
)

// Metadata is the key-value store of a GGUF file, as a GGUF reader provides
// it. Values may be any Go integer, float, bool or string type, or a slice of
// them (typed, or []any); FromGGUF converts them itself.
type Metadata interface {
	KV(key string) (any, bool)
}

// FromGGUF builds a tokenizer from the tokenizer.* keys of a GGUF file, as
// llama.cpp's llama_vocab::load does: tokenizer.ggml.model "gpt2" is
// byte-level BPE split by the regexes tokenizer.ggml.pre names, "llama" is
// SentencePiece BPE over token scores. Special ids, add_bos_token,
// add_eos_token and add_space_prefix default as in llama.cpp.
func FromGGUF(md Metadata) (*BPE, error) {
	model, err := mdString(md, "tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	pre, err := mdOptString(md, "tokenizer.ggml.pre")
	if err != nil {
		return nil, err
	}
	texts, err := mdStrings(md, "tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	n := len(texts)
	t := &BPE{texts: texts, kinds: make([]tokenKind, n)}
	types, err := mdOptInts(md, "tokenizer.ggml.token_type")
	if err != nil {
		return nil, err
	}
	for i := range t.kinds {
		t.kinds[i] = kindNormal
		if i < len(types) && types[i] >= 1 && types[i] <= 6 {
			t.kinds[i] = tokenKind(types[i])
		}
	}
	var merges [][2]string
	addBOS, addEOS := false, false
	switch model {
	case "llama":
		t.style, t.algo = styleSentencePiece, algoScores
		scores, err := mdOptFloats(md, "tokenizer.ggml.scores")
		if err != nil {
			return nil, err
		}
		if len(scores) < n {
			return nil, fmt.Errorf("%w: tokenizer.ggml.scores has %d entries for %d tokens", ErrInvalid, len(scores), n)
		}
		t.scores = scores[:n]
		t.byteFallback = true
		t.bos, t.hasBOS = 1, n > 1
		t.eos, t.hasEOS = 2, n > 2
		t.unk, t.hasUnk = 0, true
		addBOS = true
		spacePrefix := true
		if v, ok, err := mdOptBool(md, "tokenizer.ggml.add_space_prefix"); err != nil {
			return nil, err
		} else if ok {
			spacePrefix = v
		}
		if spacePrefix {
			t.normalizers = append(t.normalizers, prependNorm{prefix: " "})
			t.stripSpaces = 1
		}
		t.normalizers = append(t.normalizers, replaceNorm{old: " ", new: spmSpace})
	case "gpt2":
		t.style, t.algo = styleByteLevel, algoRanks
		raw, err := mdStrings(md, "tokenizer.ggml.merges")
		if err != nil {
			return nil, err
		}
		merges = make([][2]string, 0, len(raw))
		for _, m := range raw {
			// llama.cpp splits at the first space after the first byte.
			if k := strings.IndexByte(m[min(1, len(m)):], ' '); k >= 0 {
				k += min(1, len(m))
				merges = append(merges, [2]string{m[:k], m[k+1:]})
			} else {
				merges = append(merges, [2]string{"", ""})
			}
		}
		p, ok := ggufPres[pre]
		if !ok {
			return nil, fmt.Errorf("%w: tokenizer.ggml.pre %q", ErrUnsupported, pre)
		}
		for _, re := range p.regexes {
			sp, err := newSplitter(re)
			if err != nil {
				return nil, err
			}
			t.splitters = append(t.splitters, sp)
		}
		t.ignoreMerges, addBOS = p.ignoreMerges, p.addBOS
	default:
		return nil, fmt.Errorf("%w: tokenizer.ggml.model %q (want gpt2 or llama)", ErrUnsupported, model)
	}
	for _, k := range []struct {
		key string
		id  *int32
		has *bool
	}{
		{"tokenizer.ggml.bos_token_id", &t.bos, &t.hasBOS},
		{"tokenizer.ggml.eos_token_id", &t.eos, &t.hasEOS},
		{"tokenizer.ggml.unknown_token_id", &t.unk, &t.hasUnk},
	} {
		id, ok, err := mdOptUint(md, k.key)
		if err != nil {
			return nil, err
		}
		if ok && id < uint64(n) {
			*k.id, *k.has = int32(id), true
		}
	}
	if t.hasUnk && t.algo == algoRanks {
		t.hasUnk = false // llama.cpp's BPE drops what it cannot encode
	}
	var extraStops []int32
	for _, key := range []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if id, ok, err := mdOptUint(md, key); err != nil {
			return nil, err
		} else if ok && id < uint64(n) {
			extraStops = append(extraStops, int32(id))
		}
	}
	if v, ok, err := mdOptBool(md, "tokenizer.ggml.add_bos_token"); err != nil {
		return nil, err
	} else if ok {
		addBOS = v
	}
	if v, ok, err := mdOptBool(md, "tokenizer.ggml.add_eos_token"); err != nil {
		return nil, err
	} else if ok {
		addEOS = v
	}
	if addBOS && t.hasBOS {
		t.prefix = []int32{t.bos}
	}
	if addEOS && t.hasEOS {
		t.suffix = []int32{t.eos}
	}
	if t.chatSource, err = mdOptString(md, "tokenizer.chat_template"); err != nil {
		return nil, err
	}
	if t.rerankSource, err = mdOptString(md, "tokenizer.chat_template.rerank"); err != nil {
		return nil, err
	}
	if add, ok, err := mdOptBool(md, "tokenizer.ggml.add_sep_token"); err != nil {
		return nil, err
	} else if ok && add {
		if id, ok, err := mdOptUint(md, "tokenizer.ggml.seperator_token_id"); err != nil { // sic: llama.cpp's key
			return nil, err
		} else if ok && id < uint64(n) {
			t.sep = []int32{int32(id)}
		}
	}
	name, _ := mdOptString(md, "general.name")
	promoteControl(t)
	if err := t.finish(merges, ggufAdded(t, name), extraStops); err != nil {
		return nil, err
	}
	return t, nil
}

// controlTexts are the texts of tokens llama.cpp makes control tokens
// whatever their type: end-of-generation and fill-in-the-middle markers.
var controlTexts = map[string]bool{
	"<|eot_id|>": true, "<|im_end|>": true, "<|end|>": true, "<|return|>": true, "<|call|>": true,
	"<|flush|>": true, "<|calls|>": true, "<end_of_turn>": true, "<|endoftext|>": true, "</s>": true,
	"<|eom_id|>": true, "<EOT>": true, "_<EOT>": true, "[EOT]": true, "[EOS]": true,
	"<|end_of_text|>": true, "<end_of_utterance>": true, "<eos>": true, "<turn|>": true,
	"<|tool_response>": true, "<\uff5cend\u2581of\u2581sentence\uff5c>": true, "[e~[": true,
	"<|fim_prefix|>": true, "<fim-prefix>": true, "<fim_prefix>": true, "<\uff5cfim\u2581begin\uff5c>": true,
	"<PRE>": true, "\u2581<PRE>": true, "<|code_prefix|>": true, "<|prefix|>": true,
	"<|fim_suffix|>": true, "<fim-suffix>": true, "<fim_suffix>": true, "<\uff5cfim\u2581hole\uff5c>": true,
	"<SUF>": true, "\u2581<SUF>": true, "<|code_suffix|>": true, "<|suffix|>": true,
	"<|fim_middle|>": true, "<fim-middle>": true, "<fim_middle>": true, "<\uff5cfim\u2581end\uff5c>": true,
	"<MID>": true, "\u2581<MID>": true, "<|code_middle|>": true, "<|middle|>": true,
	"<|fim_pad|>": true, "<fim-pad>": true, "<fim_pad>": true, "<PAD>": true, "[PAD]": true,
	"<|fim_repo|>": true, "<|repo_name|>": true, "<fim-repo>": true, "<REPO>": true, "<reponame>": true,
	"<|file_sep|>": true,
}

// promoteControl changes token kinds as llama.cpp's llama_vocab::load does
// after reading them, which decides what it splits out as special: tokens
// with a controlTexts text become control tokens; gpt-oss's <|channel|>,
// <|message|>, <|start|>, <|constrain|> (and <|end|> next to <|return|> and
// <|call|>) become user-defined; Gemma-4's </s> (next to <|tool_response>)
// becomes normal.
func promoteControl(t *BPE) {
	found := make(map[string]int32)
	for id, text := range t.texts {
		switch {
		case controlTexts[text]:
			t.kinds[id] = kindControl
			found[text] = int32(id)
		case text == "<|channel|>" || text == "<|message|>" || text == "<|start|>" || text == "<|constrain|>":
			t.kinds[id] = kindUserDefined
		}
	}
	_, ret := found["<|return|>"]
	_, call := found["<|call|>"]
	_, calls := found["<|calls|>"]
	_, flush := found["<|flush|>"]
	if id, ok := found["<|end|>"]; ok && ((ret && call) || (calls && flush)) {
		t.kinds[id] = kindUserDefined
	}
	if id, ok := found["</s>"]; ok {
		if _, gemma := found["<|tool_response>"]; gemma {
			t.kinds[id] = kindNormal
		}
	}
}

// ggufAdded returns the tokens llama.cpp splits out before tokenizing:
// control, user-defined and unknown ones (tokenizer_st_partition). Control and
// unknown tokens are special. For Phi-3 (by general.name) they absorb the
// whitespace after them, except <unk>, <s> and <|endoftext|>, as llama.cpp
// hard-codes.
func ggufAdded(t *BPE, modelName string) []addedToken {
	name := strings.ToLower(modelName)
	phi3 := strings.Contains(name, "phi-3") || strings.Contains(name, "phi3")
	var added []addedToken
	for id, kind := range t.kinds {
		if kind != kindControl && kind != kindUserDefined && kind != kindUnknown {
			continue
		}
		text := t.texts[id]
		tok := addedToken{text: text, id: int32(id), special: kind != kindUserDefined}
		if phi3 && text != "<unk>" && text != "<s>" && text != "<|endoftext|>" {
			tok.rstrip = true
		}
		added = append(added, tok)
	}
	return added
}

// ggufPre is the pre-tokenizer llama.cpp uses for a tokenizer.ggml.pre value.
type ggufPre struct {
	regexes      []string // split regexes, applied in order
	ignoreMerges bool
	addBOS       bool // default of add_bos_token
}

var (
	preGPT2    = ggufPre{regexes: []string{reGPT2}}
	preLlama3  = ggufPre{regexes: []string{reLlama3CPP}, ignoreMerges: true, addBOS: true}
	preQwen2   = ggufPre{regexes: []string{reQwen2CPP}}
	preQwen35  = ggufPre{regexes: []string{reQwen35CPP}}
	preSmolLM  = ggufPre{regexes: []string{reDigit, reGPT2}}
	preTekken  = ggufPre{regexes: []string{reTekken}, ignoreMerges: true, addBOS: true}
	preGPT4o   = ggufPre{regexes: []string{reGPT4o}}
	preDefault = ggufPre{regexes: []string{reDefaultPunct, reGPT2, reDigitsRun, reDigits3}}
)

// ggufPres maps tokenizer.ggml.pre to its pre-tokenizer (llama.cpp
// llama_vocab::load and llm_tokenizer_bpe). Values not listed are rejected.
var ggufPres = map[string]ggufPre{
	"": preDefault, "default": preDefault,
	"gpt-2": preGPT2, "phi-2": preGPT2, "mpt": preGPT2, "olmo": preGPT2, "jais": preGPT2,
	"jina-es": preGPT2, "jina-de": preGPT2, "gigachat": preGPT2, "jina-v2-es": preGPT2,
	"jina-v2-de": preGPT2, "a.x-4.0": preGPT2, "mellum": preGPT2, "modern-bert": preGPT2,
	"exaone4": preGPT2, "trillion": preGPT2, "granite-docling": preGPT2,
	"llama3": preLlama3, "llama-v3": preLlama3, "llama-bpe": preLlama3, "falcon3": preLlama3,
	"falcon-h1": preLlama3, "pixtral": preLlama3, "midm-2.0": preLlama3, "lfm2": preLlama3,
	"dbrx":  {regexes: []string{reLlama3CPP}},
	"qwen2": preQwen2, "deepseek-r1-qwen": preQwen2, "kormo": preQwen2, "megrez": preQwen2,
	"stablelm2": preQwen2, "hunyuan": preQwen2,
	"qwen35": preQwen35,
	"smollm": preSmolLM, "starcoder": preSmolLM, "refact": preSmolLM, "command-r": preSmolLM,
	"codeshell": preSmolLM, "exaone": preSmolLM, "minerva-7b": preSmolLM,
	"tekken": preTekken,
	"gpt-4o": preGPT4o, "llama4": preGPT4o,
	"falcon": {regexes: []string{`[\p{P}\$\+<=>\^~\|` + "`" + `]+`, reGPT2, reDigits3}},
}

// The md* helpers read one key and convert its value.

func mdString(md Metadata, key string) (string, error) {
	v, ok := md.KV(key)
	if !ok {
		return "", fmt.Errorf("%w: missing %s", ErrInvalid, key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s is %T, want string", ErrInvalid, key, v)
	}
	return s, nil
}

func mdOptString(md Metadata, key string) (string, error) {
	if _, ok := md.KV(key); !ok {
		return "", nil
	}
	return mdString(md, key)
}

func mdOptBool(md Metadata, key string) (v, ok bool, err error) {
	x, ok := md.KV(key)
	if !ok {
		return false, false, nil
	}
	b, ok := x.(bool)
	if !ok {
		return false, false, fmt.Errorf("%w: %s is %T, want bool", ErrInvalid, key, x)
	}
	return b, true, nil
}

func mdOptUint(md Metadata, key string) (uint64, bool, error) {
	x, ok := md.KV(key)
	if !ok {
		return 0, false, nil
	}
	v := reflect.ValueOf(x)
	switch {
	case v.CanUint():
		return v.Uint(), true, nil
	case v.CanInt() && v.Int() >= 0:
		return uint64(v.Int()), true, nil
	}
	return 0, false, fmt.Errorf("%w: %s is %T(%v), want an unsigned integer", ErrInvalid, key, x, x)
}

func mdStrings(md Metadata, key string) ([]string, error) {
	x, ok := md.KV(key)
	if !ok {
		return nil, fmt.Errorf("%w: missing %s", ErrInvalid, key)
	}
	if s, ok := x.([]string); ok {
		return s, nil
	}
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Slice {
		return nil, fmt.Errorf("%w: %s is %T, want a string array", ErrInvalid, key, x)
	}
	out := make([]string, v.Len())
	for i := range out {
		s, ok := v.Index(i).Interface().(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is %T, want string", ErrInvalid, key, i, v.Index(i).Interface())
		}
		out[i] = s
	}
	return out, nil
}

// mdOptInts reads an optional integer array.
func mdOptInts(md Metadata, key string) ([]int64, error) {
	x, ok := md.KV(key)
	if !ok {
		return nil, nil
	}
	if a, ok := x.([]int32); ok { // what GGUF stores
		out := make([]int64, len(a))
		for i, e := range a {
			out[i] = int64(e)
		}
		return out, nil
	}
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Slice {
		return nil, fmt.Errorf("%w: %s is %T, want an integer array", ErrInvalid, key, x)
	}
	out := make([]int64, v.Len())
	for i := range out {
		e := reflect.ValueOf(v.Index(i).Interface())
		switch {
		case e.CanInt():
			out[i] = e.Int()
		case e.CanUint():
			out[i] = int64(e.Uint())
		default:
			return nil, fmt.Errorf("%w: %s[%d] is %s, want an integer", ErrInvalid, key, i, e.Kind())
		}
	}
	return out, nil
}

// mdOptFloats reads an optional number array as float32.
func mdOptFloats(md Metadata, key string) ([]float32, error) {
	x, ok := md.KV(key)
	if !ok {
		return nil, nil
	}
	if f, ok := x.([]float32); ok {
		return f, nil
	}
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Slice {
		return nil, fmt.Errorf("%w: %s is %T, want a number array", ErrInvalid, key, x)
	}
	out := make([]float32, v.Len())
	for i := range out {
		e := reflect.ValueOf(v.Index(i).Interface())
		switch {
		case e.CanFloat():
			out[i] = float32(e.Float())
		case e.CanInt():
			out[i] = float32(e.Int())
		case e.CanUint():
			out[i] = float32(e.Uint())
		default:
			return nil, fmt.Errorf("%w: %s[%d] is %s, want a number", ErrInvalid, key, i, e.Kind())
		}
	}
	return out, nil
}
