package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/tandem-llm/tandem/"

type pkgInfo struct {
	ImportPath string
	Deps       []string
	CgoFiles   []string
}

// buildTags are the builds the dependency rules must hold for: the
// default one and the CUDA backend's.
var buildTags = []string{"", "cuda"}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	var all []pkgInfo
	for _, tags := range buildTags {
		all = append(all, listPackagesTagged(t, tags)...)
	}
	return all
}

func listPackagesTagged(t *testing.T, tags string) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-tags", tags, "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v", tags, err)
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

// TestFrontendImportsNoEngine enforces the layout rules (README.md, Layout): frontend packages never
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
			if (strings.HasPrefix(rel, "enginecore") || strings.HasPrefix(rel, "gpu")) && strings.HasPrefix(dep, "frontend") {
				t.Errorf("%s depends on %s: the engine knows nothing of the frontend", rel, dep)
			}
			if rel == "wire" || strings.HasPrefix(rel, "wire/gguf") {
				t.Errorf("%s must import nothing of this module, depends on %s", rel, dep)
			}
		}
	}
}

// TestCgoOnlyWhereAllowed: cgo lives only in wire/zmq, gpu/nvml, gpu/cuda
// and enginecore/structured (LLGuidance).
func TestCgoOnlyWhereAllowed(t *testing.T) {
	allowed := []string{"wire/zmq", "gpu/nvml", "gpu/cuda", "enginecore/structured"}
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

// TestGoStatementsOnlyInTheEngineShell: in package enginecore only the
// shell starts goroutines (proc.go, and compilers.go, its compile
// workers); the Engine is a state machine driven by it.
func TestGoStatementsOnlyInTheEngineShell(t *testing.T) {
	files, err := filepath.Glob("../../enginecore/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("enginecore sources: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if base := filepath.Base(f); strings.HasSuffix(f, "_test.go") || base == "proc.go" || base == "compilers.go" {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement outside the shell (proc.go, compilers.go)", fset.Position(g.Pos()))
			}
			return true
		})
	}
}

// TestReadmeListsEveryPackage: the README's layout table names every
// package of the module (default and cuda builds).
func TestReadmeListsEveryPackage(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start := strings.Index(readme, "## Layout")
	end := strings.Index(readme[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("README has no ## Layout section")
	}
	layout := readme[start : start+1+end]
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if !strings.Contains(layout, "`"+rel+"`") {
			t.Errorf("README's layout table does not list %s", rel)
		}
	}
}
