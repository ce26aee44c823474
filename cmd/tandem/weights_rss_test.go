package main

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/cpu"
)

// TestWeightsResidentOnce loads the default model into the CPU backend
// and checks that the GGUF's mapped pages do not stay resident next to
// the packed matrices: the backend releases each source once packed, so
// the weights count once in the engine's RSS, not twice. The load runs in
// a child process: other tests of this binary map the same file. Only
// pages no other process maps count: the kernel keeps a page another
// process (a parallel test's engine) has mapped too.
func TestWeightsResidentOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	path := defaultModel(t)
	if os.Getenv("TANDEM_RSS_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWeightsResidentOnce$", "-test.v")
		cmd.Env = append(os.Environ(), "TANDEM_RSS_CHILD=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	be, _, _, err := loadBackend(path, "cpu", 1024, 1, cpuOptions{cpu.PrecisionPrompt, cpu.KVFloat32, ""}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rss := mappedPrivateRSS(t, path)
	t.Logf("model file %d MiB, resident (private) of its mapping after packing: %d KiB", st.Size()>>20, rss>>10)
	// Without the release all of it stays (98 of 93 MiB); a plain build
	// keeps ~5%, a -race build ~35% (make test's: not yet explained).
	if rss > st.Size()/2 {
		t.Errorf("%d KiB of the %d MiB model file stay resident after packing, want < 50%%", rss>>10, st.Size()>>20)
	}
}

// TestWeightsMappedFromCache loads the default model twice with a pack
// cache (--weights-cache-dir): the first load writes the cache file, the
// second maps it without packing; after each, the Go heap the load added
// is under half the model file (the repacked matrices are the cache
// file's pages, not heap) and the GGUF's own pages do not stay resident.
// In a child process, as TestWeightsResidentOnce.
func TestWeightsMappedFromCache(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	path := defaultModel(t)
	if os.Getenv("TANDEM_RSS_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWeightsMappedFromCache$", "-test.v")
		cmd.Env = append(os.Environ(), "TANDEM_RSS_CHILD=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, wantHit := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		be, _, _, err := loadBackend(path, "cpu", 1024, 1, cpuOptions{cpu.PrecisionPrompt, cpu.KVFloat32, dir}, discard)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		info := be.(closer).Backend.(*cpu.Backend).PackInfo()
		rss := mappedPrivateRSS(t, path)
		t.Logf("hit %v: %s, %d KiB of Go heap, model file %d MiB, resident (private) of its mapping: %d KiB",
			wantHit, info.File, heap>>10, st.Size()>>20, rss>>10)
		if info.Err != nil || info.File == "" || info.Hit != wantHit {
			t.Errorf("pack info %+v, want the cache used (hit %v)", info, wantHit)
		}
		if heap > st.Size()/2 {
			t.Errorf("loading added %d KiB of Go heap, want < half the %d MiB model file", heap>>10, st.Size()>>20)
		}
		if rss > st.Size()/2 {
			t.Errorf("%d KiB of the %d MiB model file stay resident, want < 50%%", rss>>10, st.Size()>>20)
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// mappedPrivateRSS sums the resident pages of this process's mappings of
// file path that no other process maps (Private_Clean + Private_Dirty).
func mappedPrivateRSS(t *testing.T, path string) int64 {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 6 && strings.Contains(fields[0], "-"):
			in = fields[5] == abs
		case in && len(fields) == 3 && (fields[0] == "Private_Clean:" || fields[0] == "Private_Dirty:"):
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
