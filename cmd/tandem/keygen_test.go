package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/kubesecret"
)

func TestKeygenNamesAndKeepExisting(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := keygen([]string{"--out", dir, "--name", "engine,frontend"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"engine.key", "engine.pub", "frontend.key", "frontend.pub"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("keygen --name engine,frontend: %v", err)
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "engine.key"))
	// --keep-existing keeps complete pairs and makes missing ones.
	if err := os.Remove(filepath.Join(dir, "frontend.key")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "frontend.pub")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := keygen([]string{"--out", dir, "--name", "engine,frontend", "--keep-existing"}, &out); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "engine.key"))
	if !bytes.Equal(before, after) {
		t.Error("--keep-existing replaced engine.key")
	}
	if _, err := readKeyFile(filepath.Join(dir, "frontend.key")); err != nil {
		t.Errorf("--keep-existing did not make the missing frontend pair: %v", err)
	}
	if !strings.Contains(out.String(), "kept: ") {
		t.Errorf("output %q does not say what it kept", out.String())
	}
	// Half a pair, or a pair that does not match, is an error, not kept.
	if err := os.WriteFile(filepath.Join(dir, "engine.pub"), []byte("# other\n"+mustPublic(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := keygen([]string{"--out", dir, "--name", "engine", "--keep-existing"}, io.Discard); err == nil || !strings.Contains(err.Error(), "not the secret key's") {
		t.Errorf("mismatched pair: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "engine.pub")); err != nil {
		t.Fatal(err)
	}
	if err := keygen([]string{"--out", dir, "--name", "engine", "--keep-existing"}, io.Discard); err == nil {
		t.Error("half a pair was kept")
	}
	for _, bad := range [][]string{
		{"--out", dir, "--name", "a,,b"},
		{"--out", dir, "--force", "--keep-existing"},
		{"--out", dir, "--kubernetes-secret", "s"},
		{"--name", "engine"},
	} {
		if err := keygen(bad, io.Discard); err == nil {
			t.Errorf("keygen %q succeeded", bad)
		}
	}
}

func mustPublic(t *testing.T) string {
	t.Helper()
	s, err := freshCurveSecret("x", []string{"x"}, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := oneKey("x.pub", s.Data["x.pub"])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestStaleCurveSecret(t *testing.T) {
	names := []string{"engine", "frontend"}
	fresh := func() *kubesecret.Secret {
		s, err := freshCurveSecret("tandem-curve", names, "3", map[string]string{"app": "tandem"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	other := fresh()
	tests := []struct {
		name   string
		edit   func(s *kubesecret.Secret)
		names  []string
		gen    string
		wantIn string // "" = kept
	}{
		{name: "fresh", edit: func(*kubesecret.Secret) {}, names: names, gen: "3"},
		{name: "a subset of names", edit: func(*kubesecret.Secret) {}, names: []string{"engine"}, gen: "3"},
		{name: "other generation", edit: func(*kubesecret.Secret) {}, names: names, gen: "4", wantIn: `generation "3", want "4"`},
		{name: "no annotation", edit: func(s *kubesecret.Secret) { s.Metadata.Annotations = nil }, names: names, gen: "3", wantIn: "generation"},
		{name: "missing key", edit: func(s *kubesecret.Secret) { delete(s.Data, "frontend.key") }, names: names, gen: "3", wantIn: "no frontend.key"},
		{name: "a name it lacks", edit: func(*kubesecret.Secret) {}, names: []string{"engine", "router"}, gen: "3", wantIn: "no router.key"},
		{name: "not a key", edit: func(s *kubesecret.Secret) { s.Data["engine.pub"] = []byte("hello\n") }, names: names, gen: "3", wantIn: "engine.pub:1"},
		{name: "two keys", edit: func(s *kubesecret.Secret) {
			s.Data["engine.pub"] = append(append([]byte{}, s.Data["engine.pub"]...), other.Data["engine.pub"]...)
		}, names: names, gen: "3", wantIn: "2 keys"},
		{name: "mismatched pair", edit: func(s *kubesecret.Secret) { s.Data["engine.pub"] = other.Data["frontend.pub"] }, names: names, gen: "3", wantIn: "engine: the public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fresh()
			tt.edit(s)
			got := staleCurveSecret(s, tt.names, tt.gen)
			if tt.wantIn == "" && got != "" || tt.wantIn != "" && !strings.Contains(got, tt.wantIn) {
				t.Fatalf("staleCurveSecret = %q, want %q", got, tt.wantIn)
			}
		})
	}
	s := fresh()
	if s.Type != "Opaque" || s.Metadata.Labels["app"] != "tandem" || s.Metadata.Annotations[curveGenerationAnnotation] != "3" {
		t.Errorf("fresh Secret metadata %+v, type %q", s.Metadata, s.Type)
	}
	// The data keys are files `tandem keygen --out` would write: the engine reads them.
	dir := t.TempDir()
	for k, v := range s.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := existingPair(filepath.Join(dir, "engine.key"), filepath.Join(dir, "engine.pub")); err != nil {
		t.Errorf("Secret files do not read as a keypair: %v", err)
	}
}

func TestParseLabels(t *testing.T) {
	got, err := parseLabels("a=1, b=x=y")
	if err != nil || got["a"] != "1" || got["b"] != "x=y" || len(got) != 2 {
		t.Errorf("parseLabels = %v, %v", got, err)
	}
	if _, err := parseLabels("a"); err == nil {
		t.Error("parseLabels(a) succeeded")
	}
	if got, err := parseLabels(""); got != nil || err != nil {
		t.Errorf("parseLabels('') = %v, %v", got, err)
	}
}
