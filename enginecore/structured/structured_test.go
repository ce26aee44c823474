package structured_test

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/structured"
)

// byteVocab is 256 one-byte tokens, a few longer ones, and two specials
// (EOS 300 and a chat marker 301) whose text no constraint may spell.
func byteVocab(t testing.TB) (*structured.Vocab, []string) {
	t.Helper()
	texts := make([]string, 0, 302)
	for b := range 256 {
		texts = append(texts, string([]byte{byte(b)}))
	}
	texts = append(texts, `{"`, `":`, `true`, `false`, `null`, "  ", `name`, `age`, `"}`, `ab`)
	for len(texts) < 300 {
		texts = append(texts, "unused"+string(rune('A'+len(texts)-266)))
	}
	texts = append(texts, "<|endoftext|>", "<|im_end|>")
	tokens := make([][]byte, len(texts))
	special := make([]bool, len(texts))
	for i, s := range texts {
		tokens[i] = []byte(s)
		special[i] = i >= 300
	}
	v, err := structured.NewVocab(tokens, special, []int32{300})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v, texts
}

func allowed(mask []uint32, tok int) bool { return mask[tok/32]>>(tok%32)&1 == 1 }

// feed forces text through m one byte token at a time, checking every
// token against the mask first; it returns how many bytes were accepted.
func feed(t *testing.T, v *structured.Vocab, m *structured.Matcher, text string) int {
	t.Helper()
	mask := make([]uint32, v.MaskWords())
	for i := 0; i < len(text); i++ {
		if err := m.FillMask(mask); err != nil {
			t.Fatal(err)
		}
		if !allowed(mask, int(text[i])) {
			return i
		}
		if err := m.Accept(int32(text[i])); err != nil {
			t.Fatalf("byte %d of %q allowed by the mask but refused: %v", i, text, err)
		}
	}
	return len(text)
}

// finish checks that EOS is allowed now and accepted, and that the
// matcher has ended.
func finish(t *testing.T, v *structured.Vocab, m *structured.Matcher) bool {
	t.Helper()
	mask := make([]uint32, v.MaskWords())
	if err := m.FillMask(mask); err != nil {
		t.Fatal(err)
	}
	if !allowed(mask, 300) {
		return false
	}
	if err := m.Accept(300); err != nil {
		t.Fatal(err)
	}
	return m.Done()
}

func TestConstraints(t *testing.T) {
	v, _ := byteVocab(t)
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0},
		"tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name","age"],"additionalProperties":false}`
	tests := []struct {
		name  string
		c     structured.Constraint
		valid []string
		bad   []string // each refused at some byte, or not complete at its end
	}{
		{"schema", structured.Constraint{Kind: structured.JSONSchema, Data: schema},
			[]string{`{"name":"Ann","age":3}`, `{"name": "Bo", "age": 0, "tags": ["a","b"]}`},
			[]string{`{"name":"Ann"}`, `{"name":"Ann","age":-1}`, `{"name":"Ann","age":3,"x":1}`, `{"name":1,"age":3}`, `{"name":"Ann","age":3,"tags":["c"]}`, `[1]`}},
		{"json_object", structured.Constraint{Kind: structured.JSONObject},
			[]string{`{}`, `{"a":[1,{"b":null}]}`}, []string{`[]`, `"x"`, `{"a":}`}},
		{"regex", structured.Constraint{Kind: structured.Regex, Data: `[0-9]{3}-[a-z]+`},
			[]string{`123-abc`}, []string{`12-abc`, `123-`, `123-ABC`}},
		{"choice", structured.Constraint{Kind: structured.Choice, Data: `["yes","no","maybe \"so\""]`},
			[]string{`yes`, `no`, `maybe "so"`}, []string{`ye`, `yesno`, `nah`}},
		{"grammar", structured.Constraint{Kind: structured.Grammar, Data: "start: \"(\" num (\",\" num)* \")\"\nnum: /[0-9]+/"},
			[]string{`(1)`, `(12,3,45)`}, []string{`()`, `(1,)`, `1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkStrings(t, v, tt.c, tt.valid, tt.bad, true) })
	}
}

// checkStrings forces each valid string through a fresh matcher of c (every
// byte allowed, complete at its end, and with eos also ending on EOS) and
// each bad one (refused at some byte, or not complete at its end).
func checkStrings(t *testing.T, v *structured.Vocab, c structured.Constraint, valid, bad []string, eos bool) {
	t.Helper()
	for _, s := range valid {
		m, err := v.Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		if n := feed(t, v, m, s); n != len(s) {
			t.Fatalf("valid %q refused at byte %d", s, n)
		}
		if !m.Accepting() || eos && !finish(t, v, m) {
			t.Fatalf("valid %q: not complete at its end", s)
		}
		m.Close()
	}
	for _, s := range bad {
		m, err := v.Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		if n := feed(t, v, m, s); n == len(s) && m.Accepting() {
			t.Fatalf("invalid %q accepted", s)
		}
		m.Close()
	}
}

// TestSpecialTokensNeverSpelled: a JSON string may hold "<", "|" and so
// on, but the special tokens themselves are never allowed inside it, and
// EOS only once the JSON is complete.
func TestSpecialTokensNeverSpelled(t *testing.T) {
	v, _ := byteVocab(t)
	m, err := v.Compile(structured.Constraint{Kind: structured.JSONSchema, Data: `{"type":"string"}`})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	feed(t, v, m, `"<|im_`)
	mask := make([]uint32, v.MaskWords())
	if err := m.FillMask(mask); err != nil {
		t.Fatal(err)
	}
	if allowed(mask, 301) || allowed(mask, 300) {
		t.Fatal("a special token is allowed inside a JSON string")
	}
	if !allowed(mask, 'e') {
		t.Fatal("ordinary text refused")
	}
	if err := m.Accept(301); err == nil {
		t.Fatal("a disallowed special token was accepted")
	}
}

// TestMultiByteTokens: tokens longer than a byte are allowed exactly when
// all their bytes fit.
func TestMultiByteTokens(t *testing.T) {
	v, texts := byteVocab(t)
	m, err := v.Compile(structured.Constraint{Kind: structured.JSONSchema, Data: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mask := make([]uint32, v.MaskWords())
	if err := m.FillMask(mask); err != nil {
		t.Fatal(err)
	}
	idx := func(s string) int {
		for i, x := range texts {
			if x == s {
				return i
			}
		}
		t.Fatalf("no token %q", s)
		return -1
	}
	if !allowed(mask, idx(`{"`)) || allowed(mask, idx(`true`)) || allowed(mask, idx(`"}`)) {
		t.Fatal(`at the start: want {" allowed, true and "} refused`)
	}
}

func TestCompileErrors(t *testing.T) {
	v, _ := byteVocab(t)
	for _, c := range []structured.Constraint{
		{Kind: structured.JSONSchema, Data: `{"type":`},
		{Kind: structured.JSONSchema, Data: `{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}`},
		{Kind: structured.Regex, Data: `(`},
		{Kind: structured.Choice, Data: `[]`},
		{Kind: structured.Grammar, Data: `start: nope`},
		{Kind: "xml", Data: `<a/>`},
	} {
		m, err := v.Compile(c)
		if err == nil {
			m.Close()
			t.Errorf("%v %q compiled", c.Kind, c.Data)
			continue
		}
		if !errors.Is(err, structured.ErrInvalid) || strings.TrimSpace(strings.TrimPrefix(err.Error(), structured.ErrInvalid.Error()+":")) == "" {
			t.Errorf("%v %q: error %v, want ErrInvalid with a message", c.Kind, c.Data, err)
		}
	}
}

// TestCache: a constraint compiled before is reused as a copy, which
// behaves as a new compile and is independent of other copies; the
// cache keeps at most its size.
func TestCache(t *testing.T) {
	v, _ := byteVocab(t)
	cache := structured.NewCache(v, 2)
	regex := structured.Constraint{Kind: structured.Regex, Data: `ab+c`}
	m1, hit, err := cache.Matcher(regex)
	if err != nil || hit {
		t.Fatalf("first: hit %v, %v", hit, err)
	}
	feed(t, v, m1, "abb") // advances m1 only
	m2, hit, err := cache.Matcher(regex)
	if err != nil || !hit {
		t.Fatalf("second: hit %v, %v", hit, err)
	}
	if n := feed(t, v, m2, "abc"); n != 3 || !finish(t, v, m2) {
		t.Fatalf("the cached copy is not at the start: %d bytes fed", n)
	}
	if n := feed(t, v, m1, "bc"); n != 2 || !finish(t, v, m1) {
		t.Fatal("the first matcher lost its state")
	}
	for _, d := range []string{`x`, `y`} {
		m, _, err := cache.Matcher(structured.Constraint{Kind: structured.Regex, Data: d})
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
	if cache.Len() != 2 {
		t.Fatalf("%d constraints kept, want 2", cache.Len())
	}
	if _, hit, _ := cache.Matcher(regex); hit {
		t.Fatal("the least recently used constraint was not evicted")
	}
	if _, _, err := cache.Matcher(structured.Constraint{Kind: structured.Regex, Data: `(`}); err == nil || cache.Len() != 2 {
		t.Fatalf("a failed compile: %v, %d kept", err, cache.Len())
	}
}

// TestRegexASCIIClasses generates regexes of literals, \d, \D, \w, \W,
// classes, alternations and repeats, and checks that the compiled regex
// constraint accepts exactly the strings Go's regexp (RE2, whose \d and \w
// are ASCII as in JSON Schema and vLLM's default backend) matches whole,
// on strings mixing ASCII with Unicode digits and letters.
func TestRegexASCIIClasses(t *testing.T) {
	v, _ := byteVocab(t)
	atoms := []string{`a`, `1`, `_`, `-`, `\d`, `\D`, `\w`, `\W`, `[\d]`, `[^\d]`, `[a\d]`, `[^\w]`, `[\w-]`, `\s`, `é`}
	alphabet := []string{"a", "Z", "1", "9", "_", "-", " ", "é", "٣", "🯸", "Ⅻ"}
	rng := rand.New(rand.NewPCG(3, 4))
	atom := func() string {
		s := atoms[rng.IntN(len(atoms))]
		switch rng.IntN(5) {
		case 0:
			s += "?"
		case 1:
			s += "{1,2}"
		}
		return s
	}
	for range 150 {
		var rx strings.Builder
		for range 1 + rng.IntN(3) {
			if rng.IntN(4) == 0 {
				rx.WriteString("(" + atom() + "|" + atom() + ")")
			} else {
				rx.WriteString(atom())
			}
		}
		re := regexp.MustCompile(`^(?:` + rx.String() + `)$`)
		c := structured.Constraint{Kind: structured.Regex, Data: rx.String()}
		var valid, bad []string
		for range 12 {
			var s strings.Builder
			for range 1 + rng.IntN(4) {
				s.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			if re.MatchString(s.String()) {
				valid = append(valid, s.String())
			} else {
				bad = append(bad, s.String())
			}
		}
		t.Run(rx.String(), func(t *testing.T) { checkStrings(t, v, c, valid, bad, true) })
	}
}
