package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// hfFile is the part of tokenizer.json this package reads.
type hfFile struct {
	AddedTokens   []hfAddedToken `json:"added_tokens"`
	Normalizer    *hfComponent   `json:"normalizer"`
	PreTokenizer  *hfComponent   `json:"pre_tokenizer"`
	PostProcessor *hfComponent   `json:"post_processor"`
	Decoder       *hfComponent   `json:"decoder"`
	Model         hfModel        `json:"model"`
}

type hfAddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Special    bool   `json:"special"`
}

type hfModel struct {
	Type                    string           `json:"type"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"` // ["a b", …] or [["a","b"], …]
	UnkToken                *string          `json:"unk_token"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	Dropout                 *float64         `json:"dropout"`
}

// hfComponent is any normalizer, pre-tokenizer, post-processor or decoder:
// the union of the fields of the types this package understands.
type hfComponent struct {
	Type string `json:"type"`
	// Sequence
	Normalizers   []hfComponent `json:"normalizers"`
	Pretokenizers []hfComponent `json:"pretokenizers"`
	Decoders      []hfComponent `json:"decoders"`
	Processors    []hfComponent `json:"processors"`
	// Split, Replace
	Pattern  *hfPattern `json:"pattern"`
	Behavior string     `json:"behavior"`
	Invert   bool       `json:"invert"`
	Content  string     `json:"content"`
	// Prepend
	Prepend string `json:"prepend"`
	// ByteLevel, Metaspace (legacy)
	AddPrefixSpace *bool `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`
	// Metaspace
	Replacement   string `json:"replacement"`
	PrependScheme string `json:"prepend_scheme"`
	Split         *bool  `json:"split"`
	// Digits
	IndividualDigits bool `json:"individual_digits"`
	// Strip (decoder: content/start/stop; normalizer: strip_left/strip_right)
	Start      int  `json:"start"`
	Stop       int  `json:"stop"`
	StripLeft  bool `json:"strip_left"`
	StripRight bool `json:"strip_right"`
	// TemplateProcessing
	Single        []hfTemplatePiece          `json:"single"`
	SpecialTokens map[string]hfSpecialTokens `json:"special_tokens"`
	// BertProcessing, RobertaProcessing: [text, id]
	Cls []json.RawMessage `json:"cls"`
	Sep []json.RawMessage `json:"sep"`
}

type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type hfTemplatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type hfSpecialTokens struct {
	IDs []int32 `json:"ids"`
}

// FromHFDir builds a tokenizer from a Hugging Face model directory:
// tokenizer.json (a BPE model with its normalizer, pre-tokenizer,
// post-processor and decoder), tokenizer_config.json (bos_token, eos_token,
// add_bos_token, add_eos_token, chat_template) and generation_config.json
// (eos_token_id), the last two optional. A chat_template.jinja file is used
// when tokenizer_config.json has no template.
func FromHFDir(dir string) (*BPE, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var f hfFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %w", ErrInvalid, err)
	}
	cfg, err := readHFConfig(dir)
	if err != nil {
		return nil, err
	}
	t, err := fromHF(&f, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return t, nil
}

// hfConfig is what tokenizer_config.json and generation_config.json add.
type hfConfig struct {
	bosText, eosText string
	addBOS, addEOS   *bool
	chatTemplate     string
	genEOS           []int32 // generation_config.json eos_token_id
	genBOS           *int32
}

func readHFConfig(dir string) (hfConfig, error) {
	var cfg hfConfig
	var tc struct {
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		AddBOS       *bool           `json:"add_bos_token"`
		AddEOS       *bool           `json:"add_eos_token"`
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if ok, err := readOptJSON(filepath.Join(dir, "tokenizer_config.json"), &tc); err != nil {
		return cfg, err
	} else if ok {
		cfg.bosText, cfg.eosText = tokenContent(tc.BOS), tokenContent(tc.EOS)
		cfg.addBOS, cfg.addEOS = tc.AddBOS, tc.AddEOS
		cfg.chatTemplate = chatTemplate(tc.ChatTemplate)
	}
	if cfg.chatTemplate == "" {
		if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
			cfg.chatTemplate = string(b)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return cfg, fmt.Errorf("tokenizer: %w", err)
		}
	}
	var gc struct {
		BOS *int32          `json:"bos_token_id"`
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if ok, err := readOptJSON(filepath.Join(dir, "generation_config.json"), &gc); err != nil {
		return cfg, err
	} else if ok {
		cfg.genBOS = gc.BOS
		var one int32
		if json.Unmarshal(gc.EOS, &one) == nil {
			cfg.genEOS = []int32{one}
		} else {
			_ = json.Unmarshal(gc.EOS, &cfg.genEOS) // null or absent: none
		}
	}
	return cfg, nil
}

// readOptJSON decodes path into v; ok is false when the file does not exist.
func readOptJSON(path string, v any) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("tokenizer: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrInvalid, filepath.Base(path), err)
	}
	return true, nil
}

// tokenContent reads a special token of tokenizer_config.json: a string, an
// AddedToken object {"content": …}, or null.
func tokenContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.Content
}

// chatTemplate reads chat_template: a string, or a list of {name, template}
// of which "default" is taken.
func chatTemplate(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	_ = json.Unmarshal(raw, &list)
	for _, e := range list {
		if e.Name == "default" {
			return e.Template
		}
	}
	return ""
}

func fromHF(f *hfFile, cfg hfConfig) (*BPE, error) {
	m := f.Model
	if m.Type != "BPE" && m.Type != "" {
		return nil, fmt.Errorf("%w: model type %q (want BPE)", ErrUnsupported, m.Type)
	}
	if (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") ||
		(m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") || (m.Dropout != nil && *m.Dropout > 0) {
		return nil, fmt.Errorf("%w: BPE continuing_subword_prefix, end_of_word_suffix or dropout", ErrUnsupported)
	}
	t := &BPE{algo: algoRanks, ignoreMerges: m.IgnoreMerges, byteFallback: m.ByteFallback, fuseUnk: m.FuseUnk}
	const maxVocab = 1 << 24
	n := int64(0) // vocabulary size; int64 so that id+1 cannot overflow
	for _, id := range m.Vocab {
		n = max(n, int64(id)+1)
	}
	for _, a := range f.AddedTokens {
		n = max(n, int64(a.ID)+1)
	}
	if n <= 0 || n > maxVocab {
		return nil, fmt.Errorf("%w: vocabulary of %d ids", ErrInvalid, n)
	}
	t.texts, t.kinds = make([]string, n), make([]tokenKind, n)
	for i := range t.kinds {
		t.kinds[i] = kindUnused // ids no entry names
	}
	for text, id := range m.Vocab {
		if id >= 0 {
			t.texts[id], t.kinds[id] = text, kindNormal
		}
	}
	added := make([]addedToken, 0, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			continue
		}
		t.texts[a.ID], t.kinds[a.ID] = a.Content, kindUserDefined
		if a.Special {
			t.kinds[a.ID] = kindControl
		}
		added = append(added, addedToken{text: a.Content, id: a.ID, special: a.Special,
			lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord})
	}
	byteLevel, err := t.hfPreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	if err := t.hfNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	t.style = styleSentencePiece
	if byteLevel {
		t.style = styleByteLevel
	}
	t.addedSpaces = !byteLevel
	if err := t.hfDecoder(f.Decoder, byteLevel); err != nil {
		return nil, err
	}
	merges, err := hfMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	// The vocabulary's map, with the added tokens, is the token → id index.
	t.ids = m.Vocab
	if t.ids == nil {
		t.ids = make(map[string]int32, len(added))
	}
	for _, a := range added {
		t.ids[a.text] = a.id
	}
	for text, id := range t.ids {
		if id < 0 || text == "" {
			delete(t.ids, text)
		}
	}
	if m.UnkToken != nil {
		t.unk, t.hasUnk = t.ids[*m.UnkToken]
	}
	t.bos, t.hasBOS = t.ids[cfg.bosText]
	if !t.hasBOS && cfg.genBOS != nil && *cfg.genBOS >= 0 && int64(*cfg.genBOS) < n {
		t.bos, t.hasBOS = *cfg.genBOS, true
	}
	t.eos, t.hasEOS = t.ids[cfg.eosText]
	if !t.hasEOS && len(cfg.genEOS) > 0 && cfg.genEOS[0] >= 0 && int64(cfg.genEOS[0]) < n {
		t.eos, t.hasEOS = cfg.genEOS[0], true
	}
	if err := t.hfPostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if cfg.addBOS != nil {
		t.prefix = nil
		if *cfg.addBOS && t.hasBOS {
			t.prefix = []int32{t.bos}
		}
	}
	if cfg.addEOS != nil {
		t.suffix = nil
		if *cfg.addEOS && t.hasEOS {
			t.suffix = []int32{t.eos}
		}
	}
	t.chatSource = cfg.chatTemplate
	if err := t.finish(merges, added, cfg.genEOS); err != nil {
		return nil, err
	}
	return t, nil
}

// hfMerges reads model.merges in either encoding, in rank order.
func hfMerges(raw json.RawMessage) ([][2]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("%w: model.merges: %w", ErrInvalid, err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("%w: model.merges[%d] = %q is not a pair", ErrInvalid, i, l)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// hfNormalizer appends the normalizers c describes.
func (t *BPE) hfNormalizer(c *hfComponent) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "Sequence":
		for i := range c.Normalizers {
			if err := t.hfNormalizer(&c.Normalizers[i]); err != nil {
				return err
			}
		}
	case "NFC":
		t.normalizers = append(t.normalizers, unicodeNorm{form: norm.NFC})
	case "NFD":
		t.normalizers = append(t.normalizers, unicodeNorm{form: norm.NFD})
	case "NFKC":
		t.normalizers = append(t.normalizers, unicodeNorm{form: norm.NFKC})
	case "NFKD":
		t.normalizers = append(t.normalizers, unicodeNorm{form: norm.NFKD})
	case "Prepend":
		t.normalizers = append(t.normalizers, prependNorm{prefix: c.Prepend})
	case "Lowercase":
		t.normalizers = append(t.normalizers, lowercaseNorm{})
	case "Strip":
		t.normalizers = append(t.normalizers, stripNorm{left: c.StripLeft, right: c.StripRight})
	case "Replace":
		switch {
		case c.Pattern != nil && c.Pattern.String != nil:
			t.normalizers = append(t.normalizers, replaceNorm{old: *c.Pattern.String, new: c.Content})
		case c.Pattern != nil && c.Pattern.Regex != nil:
			re, err := regexp2.Compile(*c.Pattern.Regex, regexp2.None)
			if err != nil {
				return fmt.Errorf("%w: Replace regex %q: %w", ErrUnsupported, *c.Pattern.Regex, err)
			}
			t.normalizers = append(t.normalizers, regexReplaceNorm{re: re, new: c.Content})
		default:
			return fmt.Errorf("%w: Replace normalizer without a pattern", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type)
	}
	return nil
}

// hfPreTokenizer appends the splitters c describes and reports whether it
// ends in ByteLevel (byte-level BPE). ByteLevel must be the last step, since
// byte-level mapping happens when the words reach the model.
func (t *BPE) hfPreTokenizer(c *hfComponent) (byteLevel bool, err error) {
	if c == nil {
		return false, nil
	}
	steps := []hfComponent{*c}
	if c.Type == "Sequence" {
		steps = c.Pretokenizers
	}
	for i, s := range steps {
		if byteLevel {
			return false, fmt.Errorf("%w: pre-tokenizer %q after ByteLevel", ErrUnsupported, s.Type)
		}
		switch s.Type {
		case "ByteLevel":
			byteLevel = true
			if s.AddPrefixSpace != nil && *s.AddPrefixSpace {
				t.splitters = append(t.splitters, prefixSpace{})
			}
			if s.UseRegex == nil || *s.UseRegex {
				t.splitters = append(t.splitters, scanGPT2)
			}
		case "Split":
			if s.Pattern == nil || s.Pattern.Regex == nil && s.Pattern.String == nil {
				return false, fmt.Errorf("%w: Split pre-tokenizer %d without a pattern", ErrUnsupported, i)
			}
			pattern := ""
			if s.Pattern.Regex != nil {
				pattern = *s.Pattern.Regex
			} else {
				pattern = regexp2.Escape(*s.Pattern.String)
			}
			var sp splitter
			if s.Behavior == "Isolated" && !s.Invert {
				sp, err = newSplitter(pattern)
			} else {
				sp, err = newBehaviorSplitter(pattern, s.Behavior, s.Invert)
			}
			if err != nil {
				return false, err
			}
			t.splitters = append(t.splitters, sp)
		case "Digits":
			t.splitters = append(t.splitters, digitSplitter{individual: s.IndividualDigits})
		case "Metaspace":
			if s.Replacement != "" && s.Replacement != spmSpace {
				return false, fmt.Errorf("%w: Metaspace replacement %q", ErrUnsupported, s.Replacement)
			}
			t.splitters = append(t.splitters, metaspace{prepend: metaspaceScheme(&s), splitOnSpace: s.Split == nil || *s.Split})
		default:
			return false, fmt.Errorf("%w: pre-tokenizer %q", ErrUnsupported, s.Type)
		}
	}
	return byteLevel, nil
}

// metaspaceScheme returns a Metaspace's prepend_scheme, reading the legacy
// add_prefix_space when it is absent.
func metaspaceScheme(c *hfComponent) string {
	if c.PrependScheme != "" {
		return c.PrependScheme
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
		return "never"
	}
	return "always"
}

// hfDecoder checks that the decoder is one Decode implements — ByteLevel for
// byte-level BPE; Replace(▁→space)+ByteFallback+Fuse+Strip or Metaspace for
// SentencePiece BPE — and sets how many leading spaces Decode strips.
func (t *BPE) hfDecoder(c *hfComponent, byteLevel bool) error {
	if c == nil {
		return fmt.Errorf("%w: tokenizer.json has no decoder", ErrUnsupported)
	}
	steps := []hfComponent{*c}
	if c.Type == "Sequence" {
		steps = c.Decoders
	}
	for _, s := range steps {
		ok := true
		switch s.Type {
		case "ByteLevel":
			ok = byteLevel
		case "Replace":
			ok = !byteLevel && s.Pattern != nil && s.Pattern.String != nil && *s.Pattern.String == spmSpace && s.Content == " "
		case "ByteFallback", "Fuse":
			ok = !byteLevel
		case "Strip":
			ok = !byteLevel && s.Content == " " && s.Stop == 0
			t.stripSpaces = s.Start
		case "Metaspace":
			ok = !byteLevel
			if metaspaceScheme(&s) != "never" {
				t.stripSpaces = 1
			}
		default:
			ok = false
		}
		if !ok {
			return fmt.Errorf("%w: decoder %q (byte-level pre-tokenizer: %v)", ErrUnsupported, s.Type, byteLevel)
		}
	}
	return nil
}

// hfPostProcessor sets the ids added with addSpecial from a
// TemplateProcessing (its single template), Bert/Roberta processing, or a
// Sequence of them; ByteLevel adds nothing.
func (t *BPE) hfPostProcessor(c *hfComponent) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "Sequence":
		for i := range c.Processors {
			if err := t.hfPostProcessor(&c.Processors[i]); err != nil {
				return err
			}
		}
	case "ByteLevel":
	case "TemplateProcessing":
		t.prefix, t.suffix = nil, nil
		seen := false
		for _, p := range c.Single {
			switch {
			case p.Sequence != nil:
				seen = true
			case p.SpecialToken != nil:
				st, ok := c.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("%w: post_processor special token %q not defined", ErrInvalid, p.SpecialToken.ID)
				}
				if seen {
					t.suffix = append(t.suffix, st.IDs...)
				} else {
					t.prefix = append(t.prefix, st.IDs...)
				}
			}
		}
	case "BertProcessing", "RobertaProcessing":
		cls, okC := processorID(c.Cls)
		sep, okS := processorID(c.Sep)
		if !okC || !okS {
			return fmt.Errorf("%w: %s without cls and sep", ErrInvalid, c.Type)
		}
		t.prefix, t.suffix = []int32{cls}, []int32{sep}
	default:
		return fmt.Errorf("%w: post_processor %q", ErrUnsupported, c.Type)
	}
	return nil
}

// processorID reads the id of a [text, id] pair.
func processorID(pair []json.RawMessage) (int32, bool) {
	if len(pair) != 2 {
		return 0, false
	}
	var id int32
	return id, json.Unmarshal(pair[1], &id) == nil
}
