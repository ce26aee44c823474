package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTemplateSource: --chat-template is a file, a built-in name or the
// template itself; anything else is an error naming the built-ins.
func TestTemplateSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(file, []byte("{{ messages }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want, wantErr string }{
		{in: file, want: "{{ messages }}"},
		{in: "command-r", want: "<|START_OF_TURN_TOKEN|>"},
		{in: "{% for m in messages %}{{ m.content }}{% endfor %}", want: "{% for m in messages %}"},
		{in: "no-such-template", wantErr: "llama3"},
		{in: t.TempDir(), wantErr: "chat template"},
	} {
		got, err := templateSource(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want one mentioning %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, %v; want it to contain %q", tc.in, got, err, tc.want)
		}
	}
}
