package cli

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// settings are the flags of the test command.
type settings struct {
	Model    string
	Port     int
	Threads  int
	Routing  string
	Engines  string
	Prefix   bool
	Verbose  bool
	Interval time.Duration
	Input    string
	Labels   string
}

// testCommand is a small serve-like command: a positional model, --config,
// and flags of every kind, with an alias pair (-i, --input-file).
func testCommand(s *settings) *Command {
	c := New("tandem serve", "Start engine cores and frontends as separate processes and supervise them.",
		Group{Title: "Model", Flags: []string{"model"}},
		Group{Title: "Engine", Flags: []string{"threads", "enable-prefix-caching", "heartbeat-interval"}},
		Group{Title: "Frontend", Flags: []string{"port", "i", "input-file"}},
		Group{Title: "Routing", Flags: []string{"routing", "engines", "labels", "not-a-flag-here"}},
	)
	c.Positional = "model"
	c.EnableConfig()
	fs := c.Flags
	fs.StringVar(&s.Model, "model", "dummy", `a GGUF file, a Hugging Face directory, or "dummy"`)
	fs.IntVar(&s.Port, "port", 8000, "port to listen on")
	fs.IntVar(&s.Threads, "threads", 0, "CPU `threads` for the forward pass; 0 = all")
	fs.StringVar(&s.Routing, "routing", "session", "routing policy: session, prefix, least-loaded or round-robin")
	fs.StringVar(&s.Engines, "engines", "", "comma-separated engine endpoints (default $TANDEM_ENGINES)")
	fs.BoolVar(&s.Prefix, "enable-prefix-caching", true, "reuse KV blocks of identical prefixes")
	fs.BoolVar(&s.Verbose, "verbose", false, "say more, from `tandem serve` itself")
	fs.DurationVar(&s.Interval, "heartbeat-interval", time.Second, "heartbeat period to and from frontends")
	fs.StringVar(&s.Labels, "labels", "", "`k=v,…` labels")
	for _, name := range []string{"i", "input-file"} {
		fs.StringVar(&s.Input, name, "", "input JSONL `file`, or - for stdin")
	}
	c.Help = io.Discard
	return c
}

func defaults() settings {
	return settings{Model: "dummy", Port: 8000, Routing: "session", Prefix: true, Interval: time.Second}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*settings)
		wantErr string
	}{
		{"defaults", nil, func(*settings) {}, ""},
		{"positional first", []string{"m.gguf", "--port", "9"}, func(s *settings) { s.Model, s.Port = "m.gguf", 9 }, ""},
		{"positional last", []string{"--port=9", "m.gguf"}, func(s *settings) { s.Model, s.Port = "m.gguf", 9 }, ""},
		{"positional between", []string{"--port", "9", "m.gguf", "--threads", "2"}, func(s *settings) { s.Model, s.Port, s.Threads = "m.gguf", 9, 2 }, ""},
		{"--model", []string{"--model", "m.gguf"}, func(s *settings) { s.Model = "m.gguf" }, ""},
		{"both, equal", []string{"m.gguf", "--model=m.gguf"}, func(s *settings) { s.Model = "m.gguf" }, ""},
		{"both, different", []string{"a.gguf", "--model", "b.gguf"}, nil, `serve: the model is given twice: "a.gguf" as the argument and "b.gguf" with --model`},
		{"two positionals", []string{"a.gguf", "b.gguf"}, nil, `serve: unexpected arguments ["b.gguf"] (only the model is an argument)`},
		{"after --", []string{"--port", "9", "--", "-odd-name.gguf"}, func(s *settings) { s.Model, s.Port = "-odd-name.gguf", 9 }, ""},
		{"underscores", []string{"--heartbeat_interval=2s", "--enable_prefix_caching=false"}, func(s *settings) { s.Interval, s.Prefix = 2*time.Second, false }, ""},
		{"--no-X", []string{"--no-enable-prefix-caching"}, func(s *settings) { s.Prefix = false }, ""},
		{"--no_X", []string{"--no_enable_prefix_caching", "m"}, func(s *settings) { s.Prefix, s.Model = false, "m" }, ""},
		{"values untouched", []string{"--routing", "-x_y", "--engines", "--no-verbose"}, func(s *settings) { s.Routing, s.Engines = "-x_y", "--no-verbose" }, ""},
		{"bool then positional", []string{"--verbose", "m"}, func(s *settings) { s.Verbose, s.Model = true, "m" }, ""},
		{"single dash", []string{"-port", "7", "-i", "in.jsonl"}, func(s *settings) { s.Port, s.Input = 7, "in.jsonl" }, ""},
		{"stdin dash is positional", []string{"-"}, func(s *settings) { s.Model = "-" }, ""},
		{"unknown flag", []string{"--prot", "9"}, nil, "serve: flag provided but not defined: -prot (tandem serve --help lists the flags)"},
		{"bad value", []string{"--port", "x"}, nil, `serve: invalid value "x" for flag -port: parse error (tandem serve --help lists the flags)`},
		{"--no- of a non-bool", []string{"--no-port"}, nil, "flag provided but not defined: -no-port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got settings
			err := testCommand(&got).Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) = %v, want error %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.args, err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestHelpRequested(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"m.gguf", "--port", "9", "--help"}} {
		var s settings
		c := testCommand(&s)
		var out strings.Builder
		c.Help = &out
		if err := c.Parse(args); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("Parse(%q) = %v, want flag.ErrHelp", args, err)
		}
		if !strings.HasPrefix(out.String(), "Usage: tandem serve [MODEL] [flags]\n") {
			t.Errorf("Parse(%q) printed %q", args, out.String())
		}
	}
}

func TestNoPositional(t *testing.T) {
	var s settings
	c := testCommand(&s)
	c.Positional = ""
	err := c.Parse([]string{"m.gguf"})
	if err == nil || err.Error() != `serve: unexpected arguments ["m.gguf"] (tandem serve takes none)` {
		t.Fatalf("Parse = %v", err)
	}
}

func TestUngrouped(t *testing.T) {
	var s settings
	if diff := cmp.Diff([]string{"verbose"}, testCommand(&s).Ungrouped()); diff != "" {
		t.Errorf("Ungrouped (-want +got):\n%s", diff)
	}
}

// writeConfig writes text to a file in a test directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pairs is a repeatable flag of name=value items, taking more items
// after it as argparse's nargs="+" does.
type pairs []string

func (p *pairs) String() string { return strings.Join(*p, " ") }
func (p *pairs) Set(v string) error {
	*p = append(*p, v)
	return nil
}
func (p *pairs) TakesMore(arg string) bool { return strings.Contains(arg, "=") }

func TestTakesMore(t *testing.T) {
	tests := []struct {
		args      []string
		want      []string
		wantModel string
	}{
		{[]string{"--mods", "a=/x", "b=/y", "m.gguf"}, []string{"a=/x", "b=/y"}, "m.gguf"},
		{[]string{"m.gguf", "--mods=a=/x", "b=/y", "--port", "1"}, []string{"a=/x", "b=/y"}, "m.gguf"},
		{[]string{"--mods", "a=/x", "--mods", "c=/z"}, []string{"a=/x", "c=/z"}, "dummy"},
		{[]string{"--mods", "a=/x", "-", "b=/y"}, []string{"a=/x"}, "-"},
	}
	for _, tt := range tests {
		var s settings
		var got pairs
		c := testCommand(&s)
		c.Flags.Var(&got, "mods", "name=path `items`")
		err := c.Parse(tt.args)
		if tt.args[len(tt.args)-1] == "b=/y" && len(tt.want) == 1 { // "-" is positional; b=/y a second one
			if err == nil {
				t.Errorf("Parse(%q): no error for the stray item", tt.args)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.args, err)
		}
		if diff := cmp.Diff(tt.want, []string(got)); diff != "" || s.Model != tt.wantModel {
			t.Errorf("Parse(%q): model %q (-want +got):\n%s", tt.args, s.Model, diff)
		}
	}
}
