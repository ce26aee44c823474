package tokenizer

import (
	"strings"
	"unicode"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// A normalizer rewrites each piece of text between added tokens before
// pre-tokenization (HF normalizers; llama.cpp's SentencePiece space escaping).
type normalizer interface {
	normalize(s string) string
}

// unicodeNorm applies a Unicode normalization form (HF NFC, NFD, NFKC, NFKD).
type unicodeNorm struct{ form norm.Form }

func (u unicodeNorm) normalize(s string) string { return u.form.String(s) }

// prependNorm prepends a string to non-empty text (HF Prepend; llama.cpp
// add_space_prefix, which prefixes every text fragment).
type prependNorm struct{ prefix string }

func (p prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return p.prefix + s
}

// replaceNorm replaces every occurrence of a string (HF Replace with a
// String pattern; llama.cpp's " " → "▁" escape).
type replaceNorm struct{ old, new string }

func (r replaceNorm) normalize(s string) string { return strings.ReplaceAll(s, r.old, r.new) }

// regexReplaceNorm replaces every match of a regex (HF Replace with a Regex
// pattern).
type regexReplaceNorm struct {
	re  *regexp2.Regexp
	new string
}

func (r regexReplaceNorm) normalize(s string) string {
	out, err := r.re.Replace(s, r.new, -1, -1)
	if err != nil {
		return s // only a match timeout fails, and none is set
	}
	return out
}

// lowercaseNorm lowercases text (HF Lowercase).
type lowercaseNorm struct{}

func (lowercaseNorm) normalize(s string) string { return strings.ToLower(s) }

// stripNorm removes leading and/or trailing whitespace (HF Strip).
type stripNorm struct{ left, right bool }

func (p stripNorm) normalize(s string) string {
	if p.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if p.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}
