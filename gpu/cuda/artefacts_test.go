//go:build cuda

package cuda

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/gpu/cuda/emu"
)

// TestKernelArtefactsFresh checks that the embedded PTX and cubin were
// built from the kernel sources as they are now (kernels/MANIFEST records
// the hashes scripts/kernels.sh saw), and that the emulator was told of
// them. Editing a .cu file without `make kernels` fails here; `make test`
// also recompiles and compares (scripts/kernels.sh check).
func TestKernelArtefactsFresh(t *testing.T) {
	manifest := map[string]string{}
	f, err := os.Open("kernels/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(k, "#") {
			manifest[k] = v
		}
	}
	src := sourcesHash(t)
	if manifest["sources"] != src {
		t.Errorf("kernels/*.cu changed since the artefacts were built (MANIFEST %s, now %s): run make kernels", manifest["sources"], src)
	}
	if emu.KernelSources != src {
		t.Errorf("gpu/cuda/emu/sources.go records %s, the sources are %s: run make kernels", emu.KernelSources, src)
	}
	for _, a := range []struct{ key, file string }{{"ptx", "kernels/tandem.ptx.gz"}, {"cubin", "kernels/tandem_sm90.cubin.gz"}} {
		b, err := gunzip(a.file)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != manifest[a.key] {
			t.Errorf("%s has sha256 %s, MANIFEST says %s: run make kernels", a.file, got, manifest[a.key])
		}
	}
}

// sourcesHash is scripts/kernels.sh's sources_hash: sha256 over, for each
// of compat.h and *.cu in byte order, its name, a newline and its bytes.
func sourcesHash(t *testing.T) string {
	t.Helper()
	names, err := filepath.Glob("kernels/*.cu")
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "kernels/compat.h")
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("kernels", n))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(n + "\n"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
