package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"odd unsorted", []float64{9, 1, 5}, 5},
		{"even", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := median(tt.in); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
			}
			if diff := cmp.Diff(in, tt.in); diff != "" {
				t.Errorf("median modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRowCompare(t *testing.T) {
	tests := []struct {
		name                 string
		row                  Row
		wantPrefill, wantDec *float64
		wantAgree            *int
	}{
		{
			name: "both engines",
			row: Row{
				Tandem: Measure{PrefillTokS: []float64{100, 300, 200}, DecodeTokS: []float64{40, 50, 60}, Tokens: []int32{1, 2, 3, 4}},
				Llama:  &Measure{PrefillTokS: []float64{400}, DecodeTokS: []float64{100}, Tokens: []int32{1, 2, 9, 4}},
			},
			wantPrefill: ptr(0.5), wantDec: ptr(0.5), wantAgree: ptr(2),
		},
		{
			name: "no llama.cpp",
			row:  Row{Tandem: Measure{PrefillTokS: []float64{1}, DecodeTokS: []float64{1}}},
		},
		{
			name: "llama.cpp measured nothing",
			row: Row{
				Tandem: Measure{PrefillTokS: []float64{1}, DecodeTokS: []float64{1}},
				Llama:  &Measure{PrefillTokS: []float64{0}, DecodeTokS: []float64{0}},
			},
			wantAgree: ptr(0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.row
			r.Tandem.summarize()
			if r.Llama != nil {
				r.Llama.summarize()
			}
			r.compare()
			if diff := cmp.Diff(tt.wantPrefill, r.PrefillRatio); diff != "" {
				t.Errorf("prefill ratio (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDec, r.DecodeRatio); diff != "" {
				t.Errorf("decode ratio (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAgree, r.GreedyAgree); diff != "" {
				t.Errorf("greedy agree (-want +got):\n%s", diff)
			}
		})
	}
}

// row builds a compared row from medians.
func row(kind string, threads, streams int, tandemPrefill, tandemDecode, llamaPrefill, llamaDecode float64) Row {
	r := Row{
		Config: Config{Kind: kind, Threads: threads, Streams: streams, PromptTokens: 8, GenTokens: 4, Reps: 1},
		Tandem: Measure{PrefillTokS: []float64{tandemPrefill}, DecodeTokS: []float64{tandemDecode}},
	}
	r.Tandem.summarize()
	if llamaDecode > 0 {
		r.Llama = &Measure{PrefillTokS: []float64{llamaPrefill}, DecodeTokS: []float64{llamaDecode}}
		r.Llama.summarize()
	}
	r.compare()
	return r
}

// withNative adds a native llama.cpp measure to r from medians.
func withNative(r Row, prefill, decode float64) Row {
	r.Native = &Measure{PrefillTokS: []float64{prefill}, DecodeTokS: []float64{decode}}
	r.Native.summarize()
	r.compare()
	return r
}

func TestTargets(t *testing.T) {
	tests := []struct {
		name string
		rows []Row
		want []Target
	}{
		{
			name: "single stream, met and not met",
			rows: []Row{row(kindSingle, 1, 1, 120, 110, 100, 100), row(kindSingle, 2, 1, 40, 70, 100, 100)},
			want: []Target{
				{Name: "single-stream decode vs llama.cpp prebuilt, 1 thread(s)", Want: "≥ 1.00×", Value: 1.1, Met: true},
				{Name: "single-stream prefill vs llama.cpp prebuilt, 1 thread(s)", Want: "≥ 1.00×", Value: 1.2, Met: true},
				{Name: "single-stream decode vs llama.cpp prebuilt, 2 thread(s)", Want: "≥ 1.00×", Value: 0.7, Met: false},
				{Name: "single-stream prefill vs llama.cpp prebuilt, 2 thread(s)", Want: "≥ 1.00×", Value: 0.4, Met: false},
				{Name: "single-stream decode at 2 threads vs our 1 thread", Want: "≥ 1.60×", Value: 70.0 / 110, Met: false},
			},
		},
		{
			// Met against the prebuilt libraries, not against the native build.
			name: "the native build is the baseline where it ran",
			rows: []Row{withNative(row(kindSingle, 1, 1, 60, 90, 100, 100), 200, 120), withNative(row(kindStreams, 1, 1, 1, 50, 1, 60), 1, 60), withNative(row(kindStreams, 1, 16, 1, 150, 1, 120), 1, 160)},
			want: []Target{
				{Name: "single-stream decode vs llama.cpp native, 1 thread(s)", Want: "≥ 1.00×", Value: 0.75, Met: false},
				{Name: "single-stream prefill vs llama.cpp native, 1 thread(s)", Want: "≥ 1.00×", Value: 0.3, Met: false},
				{Name: "decode at 16 streams vs our single stream, 1 thread(s)", Want: "≥ 2.00×", Value: 3, Met: true},
				{Name: "decode at 16 streams vs llama.cpp native, 1 thread(s)", Want: "≥ 1.20×", Value: 0.9375, Met: false},
			},
		},
		{
			name: "sweep at 16 streams",
			rows: []Row{row(kindStreams, 2, 1, 1, 50, 1, 60), row(kindStreams, 2, 4, 1, 80, 1, 90), row(kindStreams, 2, 16, 1, 150, 1, 120)},
			want: []Target{
				{Name: "decode at 16 streams vs our single stream, 2 thread(s)", Want: "≥ 2.00×", Value: 3, Met: true},
				{Name: "decode at 16 streams vs llama.cpp prebuilt, 2 thread(s)", Want: "≥ 1.20×", Value: 1.25, Met: true},
			},
		},
		{
			name: "without llama.cpp only our scaling",
			rows: []Row{row(kindSingle, 1, 1, 1, 1, 0, 0), row(kindStreams, 1, 1, 1, 50, 0, 0), row(kindStreams, 1, 16, 1, 90, 0, 0)},
			want: []Target{
				{Name: "decode at 16 streams vs our single stream, 1 thread(s)", Want: "≥ 2.00×", Value: 1.8, Met: false},
			},
		},
		{
			name: "no 16-stream row",
			rows: []Row{row(kindStreams, 1, 1, 1, 50, 1, 50), row(kindStreams, 1, 4, 1, 90, 1, 50)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := targets(tt.rows)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPromptIDs(t *testing.T) {
	// splitmix64 from state 0: the reference sequence's first output.
	var st uint64
	if got, want := splitmix64(&st), uint64(0xE220A8397B1DCDAF); got != want {
		t.Fatalf("splitmix64 = %#x, want %#x", got, want)
	}
	tests := []struct {
		name             string
		seed             uint64
		streams, n, voc  int
		wantLo, wantHiEx int32
	}{
		{"big vocab", 1, 3, 50, 49152, 100, 30000},
		{"small vocab", 1, 2, 40, 512, 100, 512},
		{"tiny vocab", 7, 1, 30, 50, 0, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := promptIDs(tt.seed, tt.streams, tt.n, tt.voc)
			if diff := cmp.Diff(got, promptIDs(tt.seed, tt.streams, tt.n, tt.voc)); diff != "" {
				t.Errorf("not deterministic:\n%s", diff)
			}
			if len(got) != tt.streams {
				t.Fatalf("%d streams, want %d", len(got), tt.streams)
			}
			// Streams are consecutive slices of one sequence: stream s of
			// an S-stream draw starts where a 1-stream draw of s·n ends.
			flat := promptIDs(tt.seed, 1, tt.streams*tt.n, tt.voc)[0]
			for s, p := range got {
				if diff := cmp.Diff(flat[s*tt.n:(s+1)*tt.n], p); diff != "" {
					t.Errorf("stream %d is not ids [%d, %d) of the sequence:\n%s", s, s*tt.n, (s+1)*tt.n, diff)
				}
				for _, id := range p {
					if id < tt.wantLo || id >= tt.wantHiEx {
						t.Fatalf("id %d outside [%d, %d)", id, tt.wantLo, tt.wantHiEx)
					}
				}
			}
		})
	}
}

func TestWritePromptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.txt")
	if err := writePromptFile(path, [][]int32{{1, 22, 333}, {4, 5, 6}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("1 22 333\n4 5 6\n", string(data)); diff != "" {
		t.Errorf("prompt file (-want +got):\n%s", diff)
	}
}

func TestParseSweep(t *testing.T) {
	tests := []struct {
		in      string
		want    []sweepEntry
		wantErr bool
	}{
		{in: "1:1,4,16 2:1,4,16,64", want: []sweepEntry{{1, []int{1, 4, 16}}, {2, []int{1, 4, 16, 64}}}},
		{in: ""},
		{in: "2", wantErr: true},
		{in: "x:1", wantErr: true},
		{in: "1:0", wantErr: true},
		{in: "1:", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSweep(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseSweep(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sweepEntry{})); diff != "" {
				t.Errorf("parseSweep(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestConfigs(t *testing.T) {
	o, err := parseFlags([]string{"--threads", "1,2", "--sweep", "2:1,4 1:16", "--reps", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range o.configs() {
		got = append(got, c.String())
	}
	want := []string{
		"single threads=1 streams=1 P=128 D=64",
		"streams threads=1 streams=16 P=32 D=32",
		"single threads=2 streams=1 P=128 D=64",
		"streams threads=2 streams=1 P=32 D=32",
		"streams threads=2 streams=4 P=32 D=32",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
}

func TestParseLlama(t *testing.T) {
	cfg := Config{Kind: kindSingle, Threads: 2, Streams: 1, PromptTokens: 8, GenTokens: 4, Reps: 3}
	good := `{"engine": "llama.cpp", "build": "prebuilt: x", "backend_dir": "/bins", "threads": 2, "streams": 1, "prompt_tokens": 8, "gen_tokens": 4, "kv_type": "f16",
		"flash_attn": false, "n_ubatch": 8, "prefill_tok_s": [10, 30, 20], "decode_tok_s": [5, 4, 6],
		"tokens": [1, 2, 3, 4, 5], "cpu_variant": "libggml-cpu-zen4.so", "system_info": "CPU : AVX2 = 1 | ",
		"weight_buffers": ["CPU_REPACK", "CPU_Mapped"]}`
	tests := []struct {
		name    string
		in      string
		want    Measure
		wantErr string
	}{
		{name: "good", in: good, want: Measure{PrefillTokS: []float64{10, 30, 20}, DecodeTokS: []float64{5, 4, 6}, Prefill: 20, Decode: 5, Tokens: []int32{1, 2, 3, 4, 5}}},
		{name: "not json", in: "oops", wantErr: "decode output"},
		{name: "other config", in: strings.Replace(good, `"threads": 2`, `"threads": 1`, 1), wantErr: "want single threads=2"},
		{name: "missing reps", in: strings.Replace(good, `[10, 30, 20]`, `[10]`, 1), wantErr: "repetitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, s, err := parseLlama([]byte(tt.in), cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m); diff != "" {
				t.Errorf("measure (-want +got):\n%s", diff)
			}
			want := Setup{
				KVType: "f16", UBatch: 8, Build: "prebuilt: x", BackendDir: "/bins", CPUVariant: "libggml-cpu-zen4.so",
				SystemInfo: "CPU : AVX2 = 1 |", WeightBuffers: []string{"CPU_REPACK", "CPU_Mapped"},
			}
			if diff := cmp.Diff(want, s); diff != "" {
				t.Errorf("setup (-want +got):\n%s", diff)
			}
		})
	}
}

// sampleReport has every kind of row and its targets.
func sampleReport() *Report {
	rows := []Row{
		row(kindSingle, 1, 1, 200, 90, 250, 100),
		row(kindSingle, 2, 1, 300, 120, 400, 110),
		row(kindStreams, 2, 1, 100, 80, 120, 100),
		row(kindStreams, 2, 16, 400, 300, 500, 250),
	}
	return &Report{
		Date: "2001-02-03", Model: "models/m.gguf", Machine: Machine{CPU: "Test CPU", Cores: 2, Go: "go1.26"},
		Tandem: Setup{KVType: "f32", BlockSize: 16, Kernels: "pure Go"}, Llama: &Setup{KVType: "f16", UBatch: 512},
		Rows: rows, Targets: targets(rows), Command: "go run ./cmd/tandembench --out x", MaxOtherCPU: 0.1,
	}
}

func TestWritePlot(t *testing.T) {
	var buf bytes.Buffer
	if err := writePlot(&buf, sampleReport()); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if got, want := img.Bounds(), image.Rect(0, 0, plotW, plotH); got != want {
		t.Errorf("bounds %v, want %v", got, want)
	}
	// Both engines' bar colours appear, in bar-sized amounts.
	count := map[[3]uint32]int{}
	for y := range plotH {
		for x := range plotW {
			r, g, b, _ := img.At(x, y).RGBA()
			count[[3]uint32{r >> 8, g >> 8, b >> 8}]++
		}
	}
	for name, c := range map[string][3]uint32{"tandem": {0x1f, 0x77, 0xb4}, "llama.cpp": {0xff, 0x7f, 0x0e}} {
		if count[c] < 1000 {
			t.Errorf("%s colour covers %d pixels, want bars", name, count[c])
		}
	}
	if n := count[[3]uint32{0xcc, 0, 0}]; n != 0 {
		t.Errorf("busy colour covers %d pixels on a quiet report", n)
	}
	rep := sampleReport()
	rep.MaxOtherCPU = 0.1
	rep.Rows[3].Tandem.OtherCPU = 0.5
	buf.Reset()
	if err := writePlot(&buf, rep); err != nil {
		t.Fatal(err)
	}
	img, err = png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	busy := 0
	for y := range plotH {
		for x := range plotW {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == 0xcc && g == 0 && b == 0 {
				busy++
			}
		}
	}
	if busy == 0 {
		t.Error("a busy row's note is not drawn in the busy colour")
	}
}

func TestBusy(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{{"", false}, {"0.12 0.50 1.00", false}, {"0.51 0.1 0.1", true}, {"x", false}}
	for _, tt := range tests {
		if got := busy(tt.in); got != tt.want {
			t.Errorf("busy(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestMachineBusy checks that a measured other-CPU share decides over
// the load average, which lags behind the previous phase of the run.
func TestMachineBusy(t *testing.T) {
	share := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		m    Machine
		want bool
	}{
		{"quiet, high load average", Machine{LoadAvgStart: "1.80 1.39 1.26", OtherCPUStart: share(0.02)}, false},
		{"busy, low load average", Machine{LoadAvgStart: "0.10 0.10 0.10", OtherCPUStart: share(0.25)}, true},
		{"at the bound", Machine{OtherCPUStart: share(settleShare)}, true},
		{"unmeasured, high load average", Machine{LoadAvgStart: "1.80 1.39 1.26"}, true},
		{"unmeasured, low load average", Machine{LoadAvgStart: "0.10 0.10 0.10"}, false},
	}
	for _, tt := range tests {
		if got := tt.m.busy(); got != tt.want {
			t.Errorf("%s: busy() = %v, want %v (%s)", tt.name, got, tt.want, tt.m.busyWhy())
		}
	}
}

func TestOtherCPU(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name string
		a, b cpuSample
		want float64
	}{
		{"idle but us", cpuSample{at: t0, busy: 10, own: 1, ok: true}, cpuSample{at: t0.Add(2 * time.Second), busy: 12, own: 3, ok: true}, 0},
		{"one other busy core of two", cpuSample{at: t0, busy: 10, own: 1, ok: true}, cpuSample{at: t0.Add(2 * time.Second), busy: 14, own: 3, ok: true}, 0.5},
		{"clamped at 0", cpuSample{at: t0, busy: 10, own: 1, ok: true}, cpuSample{at: t0.Add(time.Second), busy: 10.5, own: 2, ok: true}, 0},
		{"clamped at 1", cpuSample{at: t0, busy: 0, ok: true}, cpuSample{at: t0.Add(time.Second), busy: 5, ok: true}, 1},
		{"unreadable", cpuSample{at: t0}, cpuSample{at: t0.Add(time.Second), busy: 5}, 0},
		{"no time", cpuSample{at: t0, ok: true}, cpuSample{at: t0, busy: 5, ok: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := otherCPU(tt.a, tt.b, 2); got != tt.want {
				t.Errorf("otherCPU = %v, want %v", got, tt.want)
			}
		})
	}
	if s := sampleCPU(); !s.ok || s.busy <= 0 {
		t.Errorf("sampleCPU() = %+v: /proc/stat not read", s)
	}
}

// fakeSampler returns samples in which, between the two samples of
// attempt i, other processes used others[i] of the machine's CPU.
func fakeSampler(others []float64) func() cpuSample {
	t0, busy, n := time.Unix(1000, 0), 0.0, 0
	cores := float64(runtime.NumCPU())
	return func() cpuSample {
		if n%2 == 1 {
			busy += others[n/2] * cores // one second passes per attempt
		}
		n++
		return cpuSample{at: t0.Add(time.Duration(n/2) * time.Second), busy: busy, ok: true}
	}
}

func TestAttempts(t *testing.T) {
	tests := []struct {
		name      string
		retries   int
		others    []float64
		wantCalls int
		wantKept  int // 1-based call whose measure is kept
	}{
		{"quiet at once", 2, []float64{0.05}, 1, 1},
		{"quiet on the last retry", 2, []float64{0.5, 0.3, 0.05}, 3, 3},
		{"never quiet: least disturbed kept", 2, []float64{0.5, 0.2, 0.4}, 3, 2},
		{"no retries", 0, []float64{0.9}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options{maxOther: 0.1, retries: tt.retries, retryWait: time.Millisecond, sample: fakeSampler(tt.others)}
			calls := 0
			m, err := attempts(context.Background(), o, io.Discard, "test", func() (Measure, error) {
				calls++
				return Measure{Decode: float64(calls)}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := Measure{Decode: float64(tt.wantKept), OtherCPU: tt.others[tt.wantKept-1], Attempts: tt.wantCalls}
			if diff := cmp.Diff(want, m, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" || calls != tt.wantCalls {
				t.Errorf("%d calls, want %d; measure (-want +got):\n%s", calls, tt.wantCalls, diff)
			}
		})
	}
	wantErr := errors.New("boom")
	o := options{maxOther: 0.1, retries: 2, sample: fakeSampler([]float64{0})}
	if _, err := attempts(context.Background(), o, io.Discard, "test", func() (Measure, error) { return Measure{}, wantErr }); !errors.Is(err, wantErr) {
		t.Errorf("error %v, want %v", err, wantErr)
	}
}

func TestNiceStep(t *testing.T) {
	tests := []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.2, 2}, {37, 50}, {60, 100}, {180, 200}}
	for _, tt := range tests {
		if got := niceStep(tt.in); got != tt.want {
			t.Errorf("niceStep(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRenderSection(t *testing.T) {
	rep := sampleReport()
	rep.Machine.LoadAvgStart = "1.50 1.00 0.50"
	rep.MaxOtherCPU = 0.1
	rep.Rows[3].Llama.OtherCPU = 0.3 // the 16-stream row
	s := renderSection(rep, "benchmarks")
	for _, want := range []string{
		"The machine was busy when this run started (load average 1.50 1.00 0.50)",
		"<!-- tandembench:begin 2001-02-03 -->\n## 2001-02-03 — CPU engine vs llama.cpp, m.gguf",
		"1 row(s) marked ⚠ were measured while other processes used more than 10% of the CPU",
		"| 1 | 200.0 | 250.0 | 0.80× | 90.0 | 100.0 | 0.90× | 0/0 | 0% |",
		"| 2 | 16 | 300.0 | 250.0 | 1.20× | 3.75× | 400.0 | 500.0 | 30% ⚠ |",
		"| single-stream prefill vs llama.cpp prebuilt, 2 thread(s) | ≥ 1.00× | 0.75× | no |",
		"| decode at 16 streams vs our single stream, 2 thread(s) | ≥ 2.00× | 3.75× | yes |",
		"![tok/s per configuration, Tandem and llama.cpp](benchmarks/cpu-2001-02-03.png)",
		"Rerun: `make bench` (or `go run ./cmd/tandembench --out x`).",
		"<!-- tandembench:end 2001-02-03 -->\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}
}

// TestRenderSectionNative: with a native build, both llama.cpp columns,
// each build's kernels, and targets against the native one; without it,
// the reason.
func TestRenderSectionNative(t *testing.T) {
	rep := sampleReport()
	rep.Machine.ISAFlags = []string{"avx2", "fma"}
	rep.Llama.CPUVariant, rep.Llama.BestVariant, rep.Llama.SystemInfo = "libggml-cpu-haswell.so", "libggml-cpu-haswell.so", "CPU : AVX2 = 1 | REPACK = 1 |"
	rep.Native = &Setup{KVType: "f16", UBatch: 512, SystemInfo: "CPU : AVX2 = 1 | OPENMP = 1 |", WeightBuffers: []string{"CPU_Mapped"}}
	for i := range rep.Rows {
		rep.Rows[i] = withNative(rep.Rows[i], 500, 200)
	}
	rep.Targets = targets(rep.Rows)
	s := renderSection(rep, "benchmarks")
	for _, want := range []string{
		"- ISA flags for the kernels (/proc/cpuinfo): `avx2 fma`.",
		"- llama.cpp prebuilt: node-llama-cpp's prebuilt CPU libraries through the C API (scripts/llamabench); CPU variant `libggml-cpu-haswell.so`, checked to be the best prebuilt variant for this CPU; system info `CPU : AVX2 = 1 | REPACK = 1`.",
		"- llama.cpp native: the same llama.cpp source built on this machine with GGML_NATIVE (scripts/llamabench/native.sh), CPU backend linked in; system info `CPU : AVX2 = 1 | OPENMP = 1`, weights in CPU_Mapped.",
		"the targets use the native build",
		"| threads | prefill Tandem | prefill llama.cpp prebuilt | ratio | prefill llama.cpp native | ratio | decode Tandem | decode llama.cpp prebuilt | ratio | decode llama.cpp native | ratio | greedy agree (prebuilt, native) | others' CPU |",
		"| 1 | 200.0 | 250.0 | 0.80× | 500.0 | 0.40× | 90.0 | 100.0 | 0.90× | 200.0 | 0.45× | 0/0, 0/0 | 0% |",
		"| 2 | 16 | 300.0 | 250.0 | 1.20× | 200.0 | 1.50× | 3.75× | 400.0 | 500.0 | 500.0 | 0% |",
		"| single-stream prefill vs llama.cpp native, 1 thread(s) | ≥ 1.00× | 0.40× | no |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}

	rep = sampleReport()
	rep.NativeMissing = "cmake not found"
	if s := renderSection(rep, "benchmarks"); !strings.Contains(s, "**llama.cpp native: not built (cmake not found); the ratios and targets are against the prebuilt libraries only.**") {
		t.Errorf("section does not say why the native column is missing:\n%s", s)
	}
}

func TestSpliceSection(t *testing.T) {
	sec := func(date, body string) string {
		return "<!-- tandembench:begin " + date + " -->\n" + body + "\n<!-- tandembench:end " + date + " -->\n"
	}
	tests := []struct {
		name, doc, date, section, want string
	}{
		{
			name: "new date after the marker, newest first",
			doc:  "# B\n\n" + sectionsMarker + "\n\n" + sec("2001-01-01", "old"),
			date: "2001-01-02", section: sec("2001-01-02", "new"),
			want: "# B\n\n" + sectionsMarker + "\n\n" + sec("2001-01-02", "new") + sec("2001-01-01", "old"),
		},
		{
			name: "same date replaced in place",
			doc:  "# B\n\n" + sectionsMarker + "\n\n" + sec("2001-01-02", "a") + sec("2001-01-01", "old") + "tail\n",
			date: "2001-01-01", section: sec("2001-01-01", "b"),
			want: "# B\n\n" + sectionsMarker + "\n\n" + sec("2001-01-02", "a") + sec("2001-01-01", "b") + "tail\n",
		},
		{
			name: "no marker: appended",
			doc:  "# B\nhand-written",
			date: "2001-01-01", section: sec("2001-01-01", "x"),
			want: "# B\nhand-written\n\n" + sec("2001-01-01", "x"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, spliceSection(tt.doc, tt.date, tt.section)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingInputs(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"model", []string{"--model", filepath.Join(dir, "none.gguf")}, "model"},
		{"llama.cpp binary", []string{"--model", model, "--llamabench", filepath.Join(dir, "no-bench")}, "llama.cpp bench binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), append(tt.args, "--out", dir, "--doc", ""), io.Discard)
			if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run: %v, want ErrMissing naming the %s", err, tt.want)
			}
		})
	}
}

// TestQuickSmoke runs the whole command on a tiny random model, Tandem
// only: measurements, JSON, PNG and the doc section.
func TestQuickSmoke(t *testing.T) {
	dir := t.TempDir()
	model := tinyModel(t, dir)
	doc := filepath.Join(dir, "benchmarks.md")
	out := filepath.Join(dir, "benchmarks")
	args := []string{"--quick", "--no-llama", "--phase", "cpu", "--model", model, "--out", out, "--doc", doc, "--date", "2001-02-03", "--sweep", "1:1,2 2:2"}
	if err := run(context.Background(), args, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "cpu-2001-02-03.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Config.String())
		if r.Tandem.Prefill <= 0 || r.Tandem.Decode <= 0 || len(r.Tandem.DecodeTokS) != 1 {
			t.Errorf("%v: tandem measure %+v", r.Config, r.Tandem)
		}
		if len(r.Tandem.Tokens) != r.GenTokens+1 {
			t.Errorf("%v: %d greedy tokens, want D+1 = %d", r.Config, len(r.Tandem.Tokens), r.GenTokens+1)
		}
		if r.Llama != nil || r.DecodeRatio != nil {
			t.Errorf("%v: llama.cpp numbers with --no-llama", r.Config)
		}
	}
	want := []string{
		"single threads=1 streams=1 P=16 D=8",
		"streams threads=1 streams=1 P=8 D=8",
		"streams threads=1 streams=2 P=8 D=8",
		"streams threads=2 streams=2 P=8 D=8",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	// Greedy decoding is deterministic: stream 0 of the 1- and 2-stream
	// runs (same prompt) generate the same tokens, batched or not.
	if diff := cmp.Diff(rep.Rows[1].Tandem.Tokens, rep.Rows[2].Tandem.Tokens); diff != "" {
		t.Errorf("stream 0 differs between 1 and 2 streams (-1 +2):\n%s", diff)
	}
	f, err := os.Open(filepath.Join(out, "cpu-2001-02-03.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("PNG: %v", err)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Benchmarks", sectionsMarker, "## 2001-02-03", "Quick smoke run", "llama.cpp: not run"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("doc lacks %q:\n%s", want, md)
		}
	}

	// --replot redraws the same section and PNG from the JSON.
	out2 := filepath.Join(dir, "replot")
	doc2 := filepath.Join(dir, "replot.md")
	if err := run(context.Background(), []string{"--replot", filepath.Join(out, "cpu-2001-02-03.json"), "--out", out2, "--doc", doc2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	md2, err := os.ReadFile(doc2)
	if err != nil {
		t.Fatal(err)
	}
	// Same section; only the relative asset path differs.
	if diff := cmp.Diff(string(md), strings.ReplaceAll(string(md2), "(replot/", "(benchmarks/")); diff != "" {
		t.Errorf("replotted doc differs (-measured +replotted):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(out2, "cpu-2001-02-03.png")); err != nil {
		t.Errorf("replot wrote no PNG: %v", err)
	}
}
