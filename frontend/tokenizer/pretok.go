package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// A splitter is one pre-tokenizer step: it cuts a piece of text into words
// that BPE then encodes one by one. Steps run in sequence, each on every word
// of the step before (HF pre_tokenizer Sequence, llama.cpp regex_exprs).
type splitter interface {
	// split appends the words of s to dst, in order; they concatenate to s
	// unless the step rewrites text (metaspace). atStart says whether s begins
	// the input (after added-token splitting) for prepend rules.
	split(dst []string, s string, atStart bool) []string
}

// Character classes used by the scanners. A rune has at most one of
// clsLetter, clsNumber, clsMark and clsOther; clsSpace may combine with none.
const (
	clsLetter uint8 = 1 << iota // \p{L}
	clsNumber                   // \p{N}
	clsSpace                    // \s: Unicode White_Space
	clsMark                     // \p{M}
)

// asciiClass holds the class of each ASCII byte.
var asciiClass = func() (t [128]uint8) {
	for c := range 128 {
		r := rune(c)
		switch {
		case unicode.IsLetter(r):
			t[c] = clsLetter
		case unicode.IsNumber(r):
			t[c] = clsNumber
		case unicode.IsSpace(r):
			t[c] = clsSpace
		}
	}
	return t
}()

// classAt decodes the rune at s[i:] and returns it, its class and its width
// in bytes. An invalid byte decodes as utf8.RuneError of width 1 and class 0
// (like U+FFFD, a symbol).
func classAt(s string, i int) (rune, uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return r, classOf(r), w
}

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsMark(r):
		return clsMark
	case unicode.IsSpace(r):
		return clsSpace
	}
	return 0
}

// scanner is a hand-written matcher for the split regexes of the GPT-2 and
// Llama-3 families; it returns the same words as the regex (checked against
// regexp2 by FuzzScannerMatchesRegex) without the regex engine's cost.
//
//	gpt2:    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//	llama3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	qwen2:   llama3 with \p{N} instead of \p{N}{1,3}
//	qwen35:  qwen2 with [\p{L}\p{M}] wherever llama3 has \p{L}
type scanner struct {
	gpt2      bool  // GPT-2 layout; otherwise the Llama-3 layout
	letters   uint8 // classes that count as letters: clsLetter, or clsLetter|clsMark
	maxDigits int   // Llama-3 layout: longest digit run per word (1 or 3)
	foldCase  bool  // contractions match any case ('S, 'Re); llama3 layout only
}

var (
	scanGPT2   = &scanner{gpt2: true, letters: clsLetter}
	scanLlama3 = &scanner{letters: clsLetter, maxDigits: 3, foldCase: true}
	scanQwen2  = &scanner{letters: clsLetter, maxDigits: 1, foldCase: true}
	scanQwen35 = &scanner{letters: clsLetter | clsMark, maxDigits: 1, foldCase: true}
)

func (sc *scanner) split(dst []string, s string, _ bool) []string {
	for i := 0; i < len(s); {
		n := sc.match(s, i)
		dst = append(dst, s[i:i+n])
		i += n
	}
	return dst
}

// match returns the length in bytes (≥ 1) of the word that starts at s[i].
func (sc *scanner) match(s string, i int) int {
	r0, c0, w0 := classAt(s, i)
	if r0 == '\'' {
		if n := contraction(s[i+1:], sc.foldCase); n > 0 {
			return 1 + n
		}
	}
	if sc.gpt2 {
		// ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
		j, c := i, c0
		if r0 == ' ' && i+1 < len(s) {
			j = i + 1
			_, c, _ = classAt(s, j)
		}
		if r0 != ' ' || j > i {
			switch {
			case c&clsLetter != 0:
				return run(s, j, clsLetter, 0) - i
			case c&clsNumber != 0:
				return run(s, j, clsNumber, 0) - i
			case c&clsSpace == 0:
				return runNot(s, j, clsSpace|clsLetter|clsNumber) - i
			}
		}
		return sc.spaces(s, i, w0)
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0&sc.letters != 0 {
		return run(s, i, sc.letters, 0) - i
	}
	if r0 != '\r' && r0 != '\n' && c0&clsNumber == 0 && i+w0 < len(s) {
		if _, c1, _ := classAt(s, i+w0); c1&sc.letters != 0 {
			return run(s, i+w0, sc.letters, 0) - i
		}
	}
	// \p{N}{1,3}
	if c0&clsNumber != 0 {
		return run(s, i, clsNumber, sc.maxDigits) - i
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j, c := i, c0
	if r0 == ' ' && i+1 < len(s) {
		j = i + 1
		_, c, _ = classAt(s, j)
	}
	if c&(clsSpace|clsNumber|sc.letters) == 0 && (r0 != ' ' || j > i) {
		end := runNot(s, j, clsSpace|clsNumber|sc.letters)
		for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
			end++
		}
		return end - i
	}
	// \s*[\r\n]+: up to the last \r or \n of the whitespace run.
	lastNL := 0
	for k := i; k < len(s); {
		r, c, w := classAt(s, k)
		if c&clsSpace == 0 {
			break
		}
		k += w
		if r == '\r' || r == '\n' {
			lastNL = k
		}
	}
	if lastNL > 0 {
		return lastNL - i
	}
	return sc.spaces(s, i, w0)
}

// spaces matches \s+(?!\S)|\s+ at s[i]: a whitespace run, less its last
// character when a non-space follows (that character then leads the next
// word). Without whitespace at s[i] it returns w0, one character.
func (sc *scanner) spaces(s string, i, w0 int) int {
	k, last, num := i, i, 0 // end of run, start of its last rune, runes in run
	for k < len(s) {
		_, c, w := classAt(s, k)
		if c&clsSpace == 0 {
			break
		}
		last = k
		k += w
		num++
	}
	switch {
	case num > 1 && k < len(s):
		return last - i
	case num > 0:
		return k - i
	}
	return w0
}

// contraction returns the length of the contraction suffix (s, t, re, ve, m,
// ll, d) at the start of s, which follows an apostrophe, or 0. With fold, the
// letters match in either ASCII case.
func contraction(s string, fold bool) int {
	lower := func(i int) byte {
		if i >= len(s) {
			return 0
		}
		c := s[i]
		if fold && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch c0, c1 := lower(0), lower(1); {
	case c0 == 's' || c0 == 't' || c0 == 'm' || c0 == 'd':
		return 1
	case c0 == 'r' && c1 == 'e', c0 == 'v' && c1 == 'e', c0 == 'l' && c1 == 'l':
		return 2
	}
	return 0
}

// run returns the end of the run of runes in any of classes starting at
// s[i], stopping after limit runes when limit > 0.
func run(s string, i int, classes uint8, limit int) int {
	for n := 0; i < len(s) && (limit == 0 || n < limit); n++ {
		_, c, w := classAt(s, i)
		if c&classes == 0 {
			break
		}
		i += w
	}
	return i
}

// runNot returns the end of the run of runes in none of classes from s[i].
func runNot(s string, i int, classes uint8) int {
	for i < len(s) {
		_, c, w := classAt(s, i)
		if c&classes != 0 {
			break
		}
		i += w
	}
	return i
}

// digitSplitter isolates numbers: each \p{N} rune (HF Digits with
// individual_digits, llama.cpp "\p{N}") or each run of them.
type digitSplitter struct{ individual bool }

func (d digitSplitter) split(dst []string, s string, _ bool) []string {
	start := 0
	for i := 0; i < len(s); {
		_, c, w := classAt(s, i)
		if c&clsNumber == 0 {
			i += w
			continue
		}
		if i > start {
			dst = append(dst, s[start:i])
		}
		end := i + w
		if !d.individual {
			end = run(s, i, clsNumber, 0)
		}
		dst = append(dst, s[i:end])
		start, i = end, end
	}
	if start < len(s) {
		dst = append(dst, s[start:])
	}
	return dst
}

// regexSplitter isolates every match of a regex (HF Split, behavior
// Isolated): matches and the text between them become words. It serves the
// patterns that have no scanner.
type regexSplitter struct{ re *regexp2.Regexp }

func newRegexSplitter(pattern string) (*regexSplitter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%w: split regex %q: %w", ErrUnsupported, pattern, err)
	}
	return &regexSplitter{re: re}, nil
}

// runeOffsets returns s's runes for regexp2 and off, off[k] the byte
// offset of runes[k] (and off[len(runes)] = len(s)); invalid bytes are
// one rune each.
func runeOffsets(s string) (runes []rune, off []int) {
	runes = []rune(s)
	off = make([]int, 0, len(runes)+1)
	for i := 0; i < len(s); {
		_, w := utf8.DecodeRuneInString(s[i:])
		off = append(off, i)
		i += w
	}
	return runes, append(off, len(s))
}

func (r *regexSplitter) split(dst []string, s string, _ bool) []string {
	runes, off := runeOffsets(s)
	start := 0
	m, err := r.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		if m.Length > 0 {
			a, b := off[m.Index], off[m.Index+m.Length]
			if a > start {
				dst = append(dst, s[start:a])
			}
			dst = append(dst, s[a:b])
			start = b
		}
		m, err = r.re.FindNextMatch(m)
	}
	if start < len(s) {
		dst = append(dst, s[start:])
	}
	return dst
}

// metaspace is the HF Metaspace pre-tokenizer: spaces become ▁, a ▁ is
// prepended (always, or only to the start of the input), and with split the
// text is cut before every ▁.
type metaspace struct {
	prepend      string // "always", "first" or "never"
	splitOnSpace bool
}

const spmSpace = "\u2581" // ▁, SentencePiece's visible space

func (m metaspace) split(dst []string, s string, atStart bool) []string {
	s = strings.ReplaceAll(s, " ", spmSpace)
	if (m.prepend == "always" || (m.prepend == "first" && atStart)) && !strings.HasPrefix(s, spmSpace) {
		s = spmSpace + s
	}
	if !m.splitOnSpace {
		return append(dst, s)
	}
	for len(s) > 0 {
		k := strings.Index(s[1:], spmSpace)
		if k < 0 {
			break
		}
		dst = append(dst, s[:k+1])
		s = s[k+1:]
	}
	if len(s) > 0 {
		dst = append(dst, s)
	}
	return dst
}

// prefixSpace is the add_prefix_space option of HF ByteLevel: a space is
// prepended to every word that does not start with one.
type prefixSpace struct{}

func (prefixSpace) split(dst []string, s string, _ bool) []string {
	if !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	return append(dst, s)
}

// Split regexes by name; llama.cpp writes (?i:…) as explicit classes.
const (
	reGPT2         = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	reGPT2Full     = reGPT2 + `|\s+`
	reLlama3       = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reLlama3CPP    = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2        = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2CPP     = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen35       = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen35CPP    = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reDigit        = `\p{N}`
	reTekken       = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reGPT4o        = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reDefaultPunct = `[\p{P}\$\+<=>\^~\|]+`
	reDigitsRun    = `\p{N}+`
	reDigits3      = `[0-9][0-9][0-9]`
)

// scanners maps each regex with a hand-written scanner to it.
var scanners = map[string]*scanner{
	reGPT2:      scanGPT2,
	reGPT2Full:  scanGPT2,
	reLlama3:    scanLlama3,
	reLlama3CPP: scanLlama3,
	reQwen2:     scanQwen2,
	reQwen2CPP:  scanQwen2,
	reQwen35:    scanQwen35,
	reQwen35CPP: scanQwen35,
}

// newSplitter returns the fastest splitter that isolates the matches of
// pattern: a scanner, the digit splitter, or regexp2.
func newSplitter(pattern string) (splitter, error) {
	if sc, ok := scanners[pattern]; ok {
		return sc, nil
	}
	if pattern == reDigit {
		return digitSplitter{individual: true}, nil
	}
	return newRegexSplitter(pattern)
}
