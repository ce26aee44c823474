package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tandem-llm/tandem/"

type pkgInfo struct {
	ImportPath string
	Deps       []string
	CgoFiles   []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestFrontendImportsNoEngine enforces DESIGN §7: frontend packages never
// depend on enginecore or gpu packages, and wire imports nothing of ours.
func TestFrontendImportsNoEngine(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		for _, d := range p.Deps {
			dep, ours := strings.CutPrefix(d, module)
			if !ours {
				continue
			}
			if strings.HasPrefix(rel, "frontend") && (strings.HasPrefix(dep, "enginecore") || strings.HasPrefix(dep, "gpu")) {
				t.Errorf("%s depends on %s", rel, dep)
			}
			if rel == "wire" || strings.HasPrefix(rel, "wire/gguf") {
				t.Errorf("%s must import nothing of this module, depends on %s", rel, dep)
			}
		}
	}
}

// TestCgoOnlyWhereAllowed: cgo lives only in wire/zmq, gpu/nvml, gpu/cuda.
func TestCgoOnlyWhereAllowed(t *testing.T) {
	allowed := []string{"wire/zmq", "gpu/nvml", "gpu/cuda"}
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if len(p.CgoFiles) == 0 {
			continue
		}
		ok := false
		for _, a := range allowed {
			if rel == a || strings.HasPrefix(rel, a+"/") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s uses cgo (%v); cgo belongs in %v only", rel, p.CgoFiles, allowed)
		}
	}
}
