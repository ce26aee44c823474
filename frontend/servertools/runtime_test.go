package servertools

import (
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

func TestOpenFsys(t *testing.T) {
	tests := []struct {
		runtime string
		err     string // "" = opens
	}{
		{"", ""},
		{"docker-container:abc123", ""},
		{"podman-container:my_box.1", ""},
		{"ssh:user@host.example", ""},
		{"fake:does-not-exist", "unknown tool runtime: fake:does-not-exist"},
		{"ssh:-oProxyCommand=touch /tmp/pwned", "invalid ssh target: -oProxyCommand=touch /tmp/pwned"},
		{"ssh:", "invalid ssh target: "},
		{"ssh:host;rm", "invalid ssh target: host;rm"},
		{"docker-container:--privileged", "invalid container id: --privileged"},
		{"podman-container:", "invalid container id: "},
		{"docker-container:a b", "invalid container id: a b"},
		{"docker:busybox", "tool runtime must name a running container: docker:busybox"},
	}
	for _, tc := range tests {
		_, err := openFsys("", tc.runtime)
		if got := errText(err); got != tc.err {
			t.Errorf("openFsys(%q) = %q, want %q", tc.runtime, got, tc.err)
		}
	}
}

func TestCheckRuntime(t *testing.T) {
	if err := CheckRuntime("docker:busybox"); err == nil || !strings.Contains(err.Error(), "docker-container:ID") {
		t.Errorf("docker:busybox: %v, want an error naming docker-container:ID", err)
	}
	if err := CheckRuntime("ssh:host"); err != nil {
		t.Errorf("ssh:host: %v", err)
	}
}

func TestIsolateArgv(t *testing.T) {
	inner := []string{"sh", "-c", "echo 'a b'", "_"}
	tests := []struct {
		name  string
		got   []string
		want  []string
		check func([]string) bool
	}{
		{"docker with stdin", containerArgv("docker", "c1")(inner, true), append([]string{"docker", "exec", "-i", "c1"}, inner...), nil},
		{"podman without", containerArgv("podman", "c1")(inner, false), append([]string{"podman", "exec", "c1"}, inner...), nil},
		{"ssh", sshArgv("me@h")(inner, false), []string{"ssh", "-o", "BatchMode=yes", "-o", "PasswordAuthentication=no",
			"-o", "KbdInteractiveAuthentication=no", "-o", "StrictHostKeyChecking=yes", "-n", "me@h", `'sh' '-c' 'echo '\''a b'\''' '_'`}, nil},
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestShellQuote: a POSIX shell splits the quoted line back into argv.
func TestShellQuote(t *testing.T) {
	argv := []string{"a b", "it's", `"$HOME"`, "", "x\ny"}
	out, err := exec.Command("sh", "-c", "set -- "+shellQuote(argv)+`; for a in "$@"; do printf '[%s]' "$a"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "[a b][it's][\"$HOME\"][][x\ny]"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestNewSet(t *testing.T) {
	tests := []struct {
		names   []string
		runtime string
		want    []string // enabled tools; nil with err
		err     string
	}{
		{nil, "", nil, ""},
		{[]string{"all"}, "", Names(), ""},
		{[]string{"grep_search", "read_file"}, "", []string{"read_file", "grep_search"}, ""}, // llama-server's order
		{[]string{"read_file", "web_search"}, "", nil, `unknown tool "web_search". available tools: read_file, file_glob_search, grep_search, exec_shell_command, write_file, edit_file, get_info`},
		{[]string{"all"}, "nope:x", nil, "unknown tool runtime: nope:x"},
	}
	for _, tc := range tests {
		s, err := New(tc.names, tc.runtime)
		if got := errText(err); got != tc.err {
			t.Errorf("New(%q, %q) error %q, want %q", tc.names, tc.runtime, got, tc.err)
			continue
		}
		var got []string
		if s != nil {
			for _, l := range s.List() {
				got = append(got, l.Tool)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("New(%q) enables %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestLookup(t *testing.T) {
	s, _ := New([]string{"read_file", "exec_shell_command"}, "")
	tests := []struct {
		name   string
		stream bool
		want   error
	}{
		{"read_file", false, nil},
		{"exec_shell_command", true, nil},
		{"read_file", true, ErrNoStream},
		{"write_file", false, ErrUnknownTool}, // built in, not enabled
		{"nope", false, ErrUnknownTool},
	}
	for _, tc := range tests {
		if _, err := s.Lookup(tc.name, tc.stream); !errors.Is(err, tc.want) {
			t.Errorf("Lookup(%q, %v) = %v, want %v", tc.name, tc.stream, err, tc.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
