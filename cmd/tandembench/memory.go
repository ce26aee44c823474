package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
)

// The memory part of the scale phase: the peak resident set (VmHWM) of
// `tandem serve` — the supervisor, its engine and its frontend, real
// processes — serving one request on the default model at a fixed
// context, next to llama.cpp's bench process (scripts/llamabench) on the
// same model, context and prompt.

// wantResidentShare: the weights are resident once, never copied twice.
// The CPU backend repacks every matrix into its kernels' layout (as
// llama.cpp's CPU_REPACK buffers do) into its pack cache file, maps that,
// and releases the mapped pages of the model file it packed from, so the
// repacked matrices plus the engine's resident pages of the model file
// stay near one weights file; a second copy would be two.
const wantResidentShare = 1.5

// wantLoadHeapShare: the weights are mapped, not copied into the heap:
// loading the model (pack cache on) adds less Go heap than half the
// weights file.
const wantLoadHeapShare = 0.5

// memoryGen is the request's output tokens.
const memoryGen = 16

// ProcMem is one process's memory, from /proc/PID/status: the peak
// resident set, and its anonymous and file-backed (mapped files: the
// weights, the binary) parts at the end.
type ProcMem struct {
	Role       string `json:"role"` // serve, engine, frontend; llama.cpp: bench
	VmHWMKiB   int64  `json:"vm_hwm_kib"`
	RssAnonKiB int64  `json:"rss_anon_kib"`
	RssFileKiB int64  `json:"rss_file_kib"`
	// ModelPssKiB is the resident part of the process's mappings of the
	// model file, from /proc/PID/smaps (Tandem's engine; 0 elsewhere):
	// its Pss, so that a page another process maps too (a second server
	// on the same file) counts by its share.
	ModelPssKiB int64 `json:"model_pss_kib,omitempty"`
	// PackPssKiB is the same for the engine's pack cache file (its
	// repacked matrices, mapped; cpu.WithPackCache).
	PackPssKiB int64 `json:"pack_pss_kib,omitempty"`
}

// MemoryEngine is one engine's processes; PeakKiB sums their peaks.
type MemoryEngine struct {
	Processes []ProcMem `json:"processes"`
	PeakKiB   int64     `json:"peak_kib"`
}

func newMemoryEngine(ps ...ProcMem) *MemoryEngine {
	m := &MemoryEngine{Processes: ps}
	for _, p := range ps {
		m.PeakKiB += p.VmHWMKiB
	}
	return m
}

// MemoryPart is the memory part's result.
type MemoryPart struct {
	Model        string `json:"model"`
	Ctx          int    `json:"ctx"` // tokens: Tandem's --max-model-len and KV pool, llama.cpp's n_ctx
	PromptTokens int    `json:"prompt_tokens"`
	GenTokens    int    `json:"gen_tokens"`
	WeightsBytes int64  `json:"weights_file_bytes"`
	// KV pool bytes for Ctx tokens: Tandem's f32, llama.cpp's --kv-type.
	KVBytesTandem int64 `json:"kv_bytes_tandem"`
	KVBytesLlama  int64 `json:"kv_bytes_llama_cpp"`
	Threads       int   `json:"threads"`
	// LoadHeapBytes is the Go heap that loading the model into the CPU
	// backend adds (loader.Load → model.FromTensors → cpu.New, measured
	// in-process before serve runs): the engine's own copy of weights,
	// beside the mapped file (kernels.Pack's repacked matrices).
	LoadHeapBytes int64 `json:"load_heap_bytes"`
	// Tandem is the second start on a pack cache directory, which maps
	// the matrices the first wrote; TandemCold the first, which packs.
	Tandem     *MemoryEngine `json:"tandem,omitempty"`
	TandemCold *MemoryEngine `json:"tandem_cold,omitempty"`
	Llama      *MemoryEngine `json:"llama_cpp,omitempty"`
	Native     *MemoryEngine `json:"llama_cpp_native,omitempty"`
}

// residentShare is the weights Tandem's engine holds, LoadHeapBytes plus
// its resident pages of the model file and of its pack cache file at the
// end, as a share of the weights file (ok false without the numbers).
func (m *MemoryPart) residentShare() (float64, bool) {
	if m.LoadHeapBytes < 0 || m.WeightsBytes <= 0 || m.Tandem == nil {
		return 0, false
	}
	var mapped int64
	for _, p := range m.Tandem.Processes {
		mapped += (p.ModelPssKiB + p.PackPssKiB) << 10
	}
	return float64(m.LoadHeapBytes+mapped) / float64(m.WeightsBytes), true
}

// loadHeap is the Go heap loading path into the CPU backend adds, with a
// pack cache in packDir.
func loadHeap(o options, packDir string) (int64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	eng, err := loadTandem(o.model, 1, o.blockSize, o.blockSize, o.precision, cpu.WithPackCache(packDir))
	if err != nil {
		return 0, err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(eng)
	if err := eng.Close(); err != nil {
		return 0, err
	}
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), nil
}

// measureMemory runs the memory part.
func measureMemory(ctx context.Context, o options, llamas []*llamaBench, stderr io.Writer) (*MemoryPart, error) {
	s := &o.scale
	st, err := os.Stat(o.model)
	if err != nil {
		return nil, err
	}
	db, err := readDecodeBytes(o.model)
	if err != nil {
		return nil, err
	}
	threads := slicesMax(s.threads)
	kvElem := int64(2)
	if o.kvType == "f32" {
		kvElem = 4
	}
	mp := &MemoryPart{
		Model: o.model, Ctx: s.memCtx, PromptTokens: s.memPrompt, GenTokens: memoryGen, WeightsBytes: st.Size(),
		KVBytesTandem: int64(s.memCtx) * db.KVPerTok, KVBytesLlama: int64(s.memCtx) * db.KVPerTok / 4 * kvElem, Threads: threads,
	}
	packDir, err := os.MkdirTemp("", "tandembench-packed-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(packDir)
	if mp.LoadHeapBytes, err = loadHeap(o, filepath.Join(packDir, "load")); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "memory: loading %s into the CPU backend allocates %s of Go heap (the file is %s)\n", o.model, fmtBytes(float64(mp.LoadHeapBytes)), fmtBytes(float64(mp.WeightsBytes)))
	prompt := promptIDs(o.seed, 1, s.memPrompt, 30000)[0]
	serveDir := filepath.Join(packDir, "serve")
	if mp.TandemCold, err = serveMemory(ctx, o, mp, prompt, serveDir, stderr); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "memory: tandem serve, first start (packs into the cache), peak %s (%s)\n", fmtKiB(mp.TandemCold.PeakKiB), procsLine(mp.TandemCold))
	if mp.Tandem, err = serveMemory(ctx, o, mp, prompt, serveDir, stderr); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "memory: tandem serve, second start (maps the cache), peak %s (%s)\n", fmtKiB(mp.Tandem.PeakKiB), procsLine(mp.Tandem))
	for i, l := range llamas {
		cfg := Config{Kind: kindSingle, Threads: threads, Streams: 1, PromptTokens: s.memPrompt, GenTokens: memoryGen, Reps: 1}
		out, err := l.run(ctx, cfg, [][]int32{prompt}, "--ctx", strconv.Itoa(s.memCtx))
		if err != nil {
			return nil, err
		}
		if out.VmHWMKiB <= 0 {
			return nil, fmt.Errorf("memory: %s reported no VmHWM (rebuild it: scripts/llamabench/build.sh)", l.name)
		}
		me := newMemoryEngine(ProcMem{Role: "bench", VmHWMKiB: out.VmHWMKiB, RssAnonKiB: out.RssAnonKiB, RssFileKiB: out.RssFileKiB})
		if i == 0 {
			mp.Llama = me
		} else {
			mp.Native = me
		}
		fmt.Fprintf(stderr, "memory: %s peak %s (%s)\n", l.name, fmtKiB(me.PeakKiB), procsLine(me))
	}
	return mp, nil
}

func slicesMax(xs []int) int {
	m := 1
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// serveMemory starts `tandem serve` on the model with its pack cache in
// packDir, sends it one completion request, and reads every process's
// memory before stopping it.
func serveMemory(ctx context.Context, o options, mp *MemoryPart, prompt []int32, packDir string, stderr io.Writer) (*MemoryEngine, error) {
	bin := o.scale.tandemBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "tandembench-serve-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "tandem")
		fmt.Fprintln(stderr, "memory: building ./cmd/tandem")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tandem")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("memory: go build ./cmd/tandem: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	args := []string{"serve", "--model", o.model, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--served-model-name", "bench", "--max-model-len", strconv.Itoa(mp.Ctx), "--max-num-seqs", "1",
		"--kv-cache-memory", strconv.FormatInt(mp.KVBytesTandem, 10), "--threads", strconv.Itoa(mp.Threads),
		"--weights-cache-dir", packDir}
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("memory: start %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	fail := func(err error) (*MemoryEngine, error) {
		return nil, fmt.Errorf("memory: tandem %s: %w\n%s", strings.Join(args, " "), err, tail(logs.String(), 2000))
	}
	if err := waitHealthy(ctx, base, done); err != nil {
		return fail(err)
	}
	body, _ := json.Marshal(map[string]any{"model": "bench", "prompt": prompt, "max_tokens": memoryGen, "temperature": 0, "ignore_eos": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fail(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("completion: %s: %s", resp.Status, got))
	}
	modelPath, err := filepath.Abs(o.model)
	if err != nil {
		return fail(err)
	}
	if p, err := filepath.EvalSymlinks(modelPath); err == nil {
		modelPath = p
	}
	ps := []ProcMem{readProcMem(cmd.Process.Pid, "serve")}
	for _, child := range childPIDs(cmd.Process.Pid) {
		role := "child"
		if argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); err == nil {
			if f := strings.Split(string(argv), "\x00"); len(f) > 1 {
				role = f[1] // tandem engine … / tandem frontend …
			}
		}
		pm := readProcMem(child, role)
		if smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", child)); err == nil {
			pm.ModelPssKiB = mappedPssKiB(smaps, modelPath)
			pm.PackPssKiB = matchedPssKiB(smaps, func(path string) bool {
				return filepath.Dir(path) == packDir && strings.HasSuffix(path, ".tpk")
			})
		}
		ps = append(ps, pm)
	}
	return newMemoryEngine(ps...), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy polls /health until 200, the process exits or 2 minutes pass.
func waitHealthy(ctx context.Context, base string, done <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-done:
			return fmt.Errorf("exited before it was healthy: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("not healthy after 2 minutes")
}

// childPIDs lists pid's children (/proc/PID/task/*/children).
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// readProcMem reads VmHWM, RssAnon and RssFile of pid (0 where unreadable).
func readProcMem(pid int, role string) ProcMem {
	p := ProcMem{Role: role}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p
	}
	p.VmHWMKiB, p.RssAnonKiB, p.RssFileKiB = statusKiB(data, "VmHWM"), statusKiB(data, "RssAnon"), statusKiB(data, "RssFile")
	return p
}

// mappedPssKiB sums the Pss of the mappings of file in a /proc/PID/smaps
// text: a mapping's header line ends with its path, its "Pss:" line
// follows.
func mappedPssKiB(smaps []byte, file string) int64 {
	return matchedPssKiB(smaps, func(path string) bool { return path == file })
}

// matchedPssKiB sums the Pss of the mappings whose path match accepts.
func matchedPssKiB(smaps []byte, match func(path string) bool) int64 {
	var total int64
	in := false
	for line := range strings.SplitSeq(string(smaps), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			in = len(f) >= 6 && match(strings.Join(f[5:], " ")) // address perms offset dev inode [path]
		case in && len(f) >= 2 && f[0] == "Pss:":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			total += n
		}
	}
	return total
}

// statusKiB is the kB value of a "Name:" line of a /proc status file.
func statusKiB(status []byte, name string) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func fmtKiB(k int64) string { return fmtBytes(float64(k) * 1024) }

func procsLine(m *MemoryEngine) string {
	var parts []string
	for _, p := range m.Processes {
		parts = append(parts, fmt.Sprintf("%s %s peak, %s anon + %s file at the end", p.Role, fmtKiB(p.VmHWMKiB), fmtKiB(p.RssAnonKiB), fmtKiB(p.RssFileKiB)))
	}
	return strings.Join(parts, "; ")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
