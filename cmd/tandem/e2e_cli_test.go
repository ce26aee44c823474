package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goPlaceholders are what Go's flag package prints for an unnamed value;
// the help must never show them.
var goPlaceholders = map[string]bool{"string": true, "int": true, "int64": true, "uint": true, "uint64": true,
	"float": true, "float64": true, "duration": true, "value": true, "bool": true}

// helpTitles are the group titles a command's help may use.
var helpTitles = map[string]bool{"Options": true, "Model": true, "Engine": true, "Parallelism": true, "Frontend": true,
	"Routing": true, "Heartbeats": true, "Batch": true, "Security": true, "Logging": true,
	"Server": true, "Dataset": true, "Load": true, "Results": true, "Output": true,
	"Keys": true, "Kubernetes": true} // keygen's, once it goes through cli

var groupLine = regexp.MustCompile(`^(\w+):$`)

var flagLine = regexp.MustCompile(`^  (-[-\w]+(?:, -[-\w]+)*)(?: (\S+))?`)

// checkHelp checks a command's help text: known group titles only, no
// "Other" group, no Go placeholder text.
func checkHelp(t *testing.T, name, help string) {
	t.Helper()
	for _, line := range strings.Split(help, "\n") {
		if m := groupLine.FindStringSubmatch(line); m != nil {
			if title := m[1]; !helpTitles[title] {
				t.Errorf("tandem %s --help: group %q (every flag needs a named group)", name, title)
			}
		}
		if m := flagLine.FindStringSubmatch(line); m != nil && goPlaceholders[m[2]] {
			t.Errorf("tandem %s --help: Go placeholder in %q", name, line)
		}
	}
}

// TestEveryFlagInAGroup: every flag of every command is in a named help
// group, and the help names values meaningfully.
func TestEveryFlagInAGroup(t *testing.T) {
	for _, c := range commands {
		if c.cli == nil {
			t.Logf("tandem %s parses its own flags: not checked", c.name)
			continue
		}
		cmd := c.cli()
		if got := cmd.Ungrouped(); len(got) > 0 {
			t.Errorf("tandem %s: flags %v are in no group (add them to flaggroups.go or the command's groups)", c.name, got)
		}
		var b strings.Builder
		if err := cmd.WriteHelp(&b); err != nil {
			t.Fatal(err)
		}
		checkHelp(t, c.name, b.String())
	}
}

// TestHelpExitsZero: --help and -h print the help to stdout and exit 0, for
// tandem and every command.
func TestHelpExitsZero(t *testing.T) {
	runs := [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "serve"}}
	for _, c := range commands {
		runs = append(runs, []string{c.name, "--help"}, []string{c.name, "-h"})
	}
	grouped := map[string]bool{}
	for _, c := range commands {
		grouped[c.name] = c.cli != nil
	}
	for _, args := range runs {
		cmd := exec.Command(binPath, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("tandem %v: %v\n%s", args, err, stderr.String())
			continue
		}
		name := args[0]
		if name == "help" && len(args) > 1 {
			name = args[1]
		}
		switch {
		case strings.HasPrefix(name, "-") || name == "help":
			if !strings.Contains(stdout.String(), "\nServing:\n  serve") || !strings.Contains(stdout.String(), "\nTools:\n") {
				t.Errorf("tandem %v: no grouped command list:\n%s", args, stdout.String())
			}
		case grouped[name]:
			if !strings.HasPrefix(stdout.String(), "Usage: tandem "+name) || stderr.Len() > 0 {
				t.Errorf("tandem %v: stdout %q, stderr %q", args, stdout.String(), stderr.String())
			}
			checkHelp(t, name, stdout.String())
		}
	}
	out, _ := exec.Command(binPath, "serve", "--help").Output()
	for _, g := range []string{"Model", "Engine", "Frontend", "Routing", "Security", "Logging"} {
		if !strings.Contains(string(out), "\n"+g+":\n") {
			t.Errorf("tandem serve --help has no %s group:\n%s", g, out)
		}
	}
}

// TestServeConfigFile: `tandem serve --config FILE` takes the port, threads
// and routing policy from the file; the routing shows in the frontend's
// log and the threads in the engine's.
func TestServeConfigFile(t *testing.T) {
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	text := fmt.Sprintf("# tandem serve --config\nmodel: dummy\nport: %d\nthreads: 1\nrouting: prefix\nmax_model_len: 512\nkv-cache-memory: 32Mi\n", port)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "serve", "--config", cfg)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	code, body := postJSON(t, base+"/v1/completions", map[string]any{"model": "dummy", "prompt": "hi", "max_tokens": 2}, nil)
	if code != http.StatusOK {
		t.Fatalf("completion: %d %v", code, body)
	}
	logs := p.out.String()
	for _, want := range []string{`msg="frontend serving"`, "routing=prefix", "max_model_len=512", `msg="engine core serving"`, "threads=1"} {
		if !strings.Contains(logs, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, logs)
		}
	}
}
