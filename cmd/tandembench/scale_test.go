package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

func TestParseBenchModels(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"1b:q4_0,q4_k_m 3b:q8_0", []string{"1b-q4_0", "1b-q4_k_m", "3b-q8_0"}, false},
		{"", nil, false},
		{"7b:q4_0", nil, true},
		{"1b:q2_k", nil, true},
		{"1b", nil, true},
	}
	for _, tt := range tests {
		got, err := parseBenchModels(tt.in)
		if (err != nil) != tt.wantErr || !cmp.Equal(got, tt.want) {
			t.Errorf("parseBenchModels(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestLowBitMixes checks the Q3_K_M and IQ4_XS recipes at 16 layers:
// the base type, and which layers' attn_v and ffn_down go up a step.
func TestLowBitMixes(t *testing.T) {
	tests := []struct {
		quant string
		base  model.DType
		up    map[string]model.DType // tensor → type; the rest of attn_v/ffn_down are listed too
	}{
		{"q3_k_m", model.Q3_K, map[string]model.DType{
			"blk.0.attn_v.weight": model.Q5_K, "blk.1.attn_v.weight": model.Q5_K, "blk.2.attn_v.weight": model.Q4_K, "blk.15.attn_v.weight": model.Q4_K,
			"blk.0.ffn_down.weight": model.Q5_K, "blk.1.ffn_down.weight": model.Q4_K, "blk.15.attn_output.weight": model.Q4_K,
		}},
		{"iq4_xs", model.IQ4_XS, map[string]model.DType{
			"blk.0.attn_v.weight": model.Q5_K, "blk.15.attn_v.weight": model.Q5_K,
			"blk.0.ffn_down.weight": model.Q5_K, "blk.1.ffn_down.weight": model.Q5_K, "blk.2.ffn_down.weight": model.IQ4_XS,
			"blk.0.attn_output.weight": model.IQ4_XS,
		}},
	}
	for _, tt := range tests {
		base, types := benchQuants[tt.quant](16)
		if base != tt.base || types["output.weight"] != model.Q6_K {
			t.Errorf("%s: base %v, output %v", tt.quant, base, types["output.weight"])
		}
		for name, want := range tt.up {
			got, ok := types[name]
			if !ok {
				got = base
			}
			if got != want {
				t.Errorf("%s: %s is %v, want %v", tt.quant, name, got, want)
			}
		}
	}
}

// TestQ4KMMix checks the layers whose attn_v and ffn_down get Q6_K in a
// 16-layer Q4_K_M: the first and last eighth and every third between.
func TestQ4KMMix(t *testing.T) {
	base, types := benchQuants["q4_k_m"](16)
	if base != model.Q4_K || types["output.weight"] != model.Q6_K {
		t.Fatalf("base %v, output %v", base, types["output.weight"])
	}
	var got []string
	for i := range 16 {
		for _, n := range []string{"attn_v", "ffn_down"} {
			if typ, ok := types["blk."+strconv.Itoa(i)+"."+n+".weight"]; ok && typ == model.Q6_K {
				got = append(got, n+strconv.Itoa(i))
			}
		}
	}
	var want []string
	for _, i := range []int{0, 1, 4, 7, 10, 13, 14, 15} {
		want = append(want, "attn_v"+strconv.Itoa(i), "ffn_down"+strconv.Itoa(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Q6_K tensors (-want +got):\n%s", diff)
	}
}

func TestDecodeBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	spec := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 64, Seed: 1}
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	db, err := readDecodeBytes(path)
	if err != nil {
		t.Fatal(err)
	}
	// f32: per layer 2 norms (32) + q, o (32×32) + k, v (16×32) + 3 FFN (64×32);
	// one embedding row (32), the output (300×32), the final norm (32).
	layer := 2*32 + 2*32*32 + 2*16*32 + 3*64*32
	want := int64(4 * (2*layer + 32 + 300*32 + 32))
	if db.Weights != want {
		t.Errorf("weights %d bytes, want %d", db.Weights, want)
	}
	if want := int64(2 * 2 * 16 * 4); db.KVPerTok != want {
		t.Errorf("KV %d bytes per token, want %d", db.KVPerTok, want)
	}
	if got, want := db.at(10, 2), float64(db.Weights)+10*float64(db.KVPerTok)/2; got != want {
		t.Errorf("at(10, f16) = %g, want %g", got, want)
	}
}

func TestScaleTargets(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	native := &Measure{Decode: 10, Prefill: 100}
	rep := &ScaleReport{
		Rows: []ScaleRow{
			{Model: "1b-q4_0", Row: Row{Config: Config{Kind: kindModel, Threads: 1}, Native: native, NativeDecodeRatio: f(0.95), NativePrefillRatio: f(0.5)}, DRAMTandem: f(0.8), FastPrefillRatio: f(0.91)},
			{Model: "1b-q8_0", Row: Row{Config: Config{Kind: kindModel, Threads: 1}, Native: native, NativeDecodeRatio: f(0.5)}},
			{Model: "x.gguf", Row: Row{Config: Config{Kind: kindLong, Threads: 2, PromptTokens: 2048}, Native: native, NativeDecodeRatio: f(1.2), NativePrefillRatio: f(0.89)}},
			{Model: "x.gguf", Row: Row{Config: Config{Kind: kindLong, Threads: 2, PromptTokens: 8192}, Native: native, NativeDecodeRatio: f(0.1)}},
		},
		Memory: &MemoryPart{WeightsBytes: 100 << 20, LoadHeapBytes: 130 << 20, Tandem: newMemoryEngine(
			ProcMem{Role: "serve"}, ProcMem{Role: "engine", ModelPssKiB: 30 << 10, PackPssKiB: 20 << 10}, ProcMem{Role: "frontend"})},
	}
	var got []string
	for _, tg := range scaleTargets(rep) {
		got = append(got, tg.Name+" "+fmtTarget(tg)+" "+metWord(tg.Met))
	}
	want := []string{
		"1b-q4_0 decode vs llama.cpp native, 1 thread(s) 0.95× yes",
		"1b-q4_0 decode, share of the DRAM bound, 1 thread(s) 80% yes",
		"1b-q4_0 prefill vs llama.cpp native, 1 thread(s) 0.50× no",
		"1b-q4_0 prefill at --cpu-precision fast (llama.cpp's int8 arithmetic) vs llama.cpp native, 1 thread(s) 0.91× yes",
		"P = 2048 prefill vs llama.cpp native, 2 thread(s) 0.89× no",
		"decode at depth 2048 vs llama.cpp native, 2 thread(s) 1.20× yes",
		"Go heap the CPU backend adds loading the model (matrices mapped from its pack cache), share of the weights file (mapped, not copied) 130% no",
		"weights the engine holds (Go heap + resident pages of the model file and of its pack cache file), share of the weights file (resident once) 180% no",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}

func TestMappedRssKiB(t *testing.T) {
	smaps := []byte(`55d0c0000000-55d0c0100000 r-xp 00000000 fd:01 42                         /usr/bin/tandem
Rss:                 100 kB
7f0000000000-7f0001000000 r--p 00000000 fd:01 77                         /m/a model.gguf
Size:              16384 kB
Rss:                 600 kB
Pss:                 300 kB
7f0001000000-7f0002000000 rw-p 00000000 00:00 0 
Rss:                  50 kB
7f0002000000-7f0003000000 r--p 01000000 fd:01 77                         /m/a model.gguf
Rss:                  20 kB
Pss:                  20 kB
VmFlags: rd mr mw me sd
`)
	if got := mappedPssKiB(smaps, "/m/a model.gguf"); got != 320 {
		t.Errorf("model file Pss %d kB, want 320", got)
	}
	if got := mappedPssKiB(smaps, "/m/other.gguf"); got != 0 {
		t.Errorf("unmapped file Pss %d kB, want 0", got)
	}
}

func TestStatusKiB(t *testing.T) {
	status := []byte("Name:\tx\nVmHWM:\t  1234 kB\nRssAnon:\t  56 kB\n")
	if got := statusKiB(status, "VmHWM"); got != 1234 {
		t.Errorf("VmHWM %d", got)
	}
	if got := statusKiB(status, "RssFile"); got != 0 {
		t.Errorf("RssFile %d, want 0 (absent)", got)
	}
	if p := readProcMem(os.Getpid(), "self"); p.VmHWMKiB <= 0 {
		t.Errorf("own VmHWM %d", p.VmHWMKiB)
	}
}

// TestScaleQuick runs the scale phase on tiny random models, Tandem
// only (models and long parts: the memory part builds and starts the
// server), and redraws its section from the JSON.
func TestScaleQuick(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "tiny.gguf")
	if err := testmodel.WriteGGUF(def, testmodel.Spec{Arch: "llama", VocabSize: 512, Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 128, ContextLen: 256, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	out, doc := filepath.Join(dir, "benchmarks"), filepath.Join(dir, "benchmarks.md")
	args := []string{"--quick", "--no-llama", "--phase", "scale", "--model", def, "--out", out, "--doc", doc, "--date", "2001-02-03",
		"--scale-model-dir", filepath.Join(dir, "models"), "--scale-models", "tiny:q4_0,q8_0"}
	if err := run(context.Background(), args, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "scale-2001-02-03.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep ScaleReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Model+" "+r.Config.String())
		if r.Tandem.Decode <= 0 || r.BytesTandem <= 0 || r.DRAMTandem == nil || *r.DRAMTandem <= 0 {
			t.Errorf("%s %v: decode %g, bytes %g, DRAM share %v", r.Model, r.Config, r.Tandem.Decode, r.BytesTandem, r.DRAMTandem)
		}
		// The run's precision is the default (prompt): model rows are measured again at fast.
		if fast := r.Fast != nil && r.Fast.Prefill > 0; fast != (r.Kind == kindModel) {
			t.Errorf("%s %v: fast-precision measure %+v", r.Model, r.Config, r.Fast)
		}
	}
	want := []string{
		"tiny-q4_0 model threads=1 streams=1 P=16 D=8",
		"tiny-q8_0 model threads=1 streams=1 P=16 D=8",
		"tiny.gguf long threads=1 streams=1 P=64 D=4",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if rep.Bandwidth == nil || rep.Bandwidth.of(1) <= 0 || len(rep.Models) != 2 {
		t.Errorf("bandwidth %+v, models %+v", rep.Bandwidth, rep.Models)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{scaleBegin, scaleEnd, "Quick smoke run", "% of DRAM bound Tandem", "Long context on tiny.gguf", "prefill Tandem fast"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("doc lacks %q:\n%s", w, md)
		}
	}
	// A second run finds the GGUFs in the cache.
	if err := run(context.Background(), append(args, "--scale", "models"), io.Discard); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(out, "scale-2001-02-03.json"))
	var again ScaleReport
	if err := json.Unmarshal(data, &again); err != nil {
		t.Fatal(err)
	}
	for _, m := range again.Models {
		if m.GeneratedSeconds != 0 {
			t.Errorf("%s written again, not taken from the cache", m.Name)
		}
	}
	// A memory part that cannot start the server costs no other rows.
	if err := run(context.Background(), append(args, "--scale", "long,memory", "--tandem-bin", filepath.Join(dir, "no-tandem")), io.Discard); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(out, "scale-2001-02-03.json"))
	var failed ScaleReport
	if err := json.Unmarshal(data, &failed); err != nil {
		t.Fatal(err)
	}
	if failed.MemoryError == "" || failed.Memory != nil || len(failed.Rows) != 1 {
		t.Errorf("memory error %q, memory %+v, %d rows; want the error and the long row", failed.MemoryError, failed.Memory, len(failed.Rows))
	}
	// --replot redraws the section from the JSON.
	doc2 := filepath.Join(dir, "replot.md")
	if err := run(context.Background(), []string{"--phase", "scale", "--replot", filepath.Join(out, "scale-2001-02-03.json"), "--out", out, "--doc", doc2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if md2, _ := os.ReadFile(doc2); !strings.Contains(string(md2), "The memory part failed") || !strings.Contains(string(md2), "| tiny.gguf | 1 | 64 |") {
		t.Errorf("replotted doc lacks the rows:\n%s", md2)
	}
}

// TestResolveBenchModel: --model bench:SHAPE-QUANT writes that random
// GGUF once into --scale-model-dir and benchmarks it; a path is kept; an
// unknown shape is an error.
func TestResolveBenchModel(t *testing.T) {
	dir := t.TempDir()
	o := options{model: "bench:tiny-q8_0"}
	o.scale.dir = dir
	if err := resolveBenchModel(&o, io.Discard); err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(o.model) != dir || !strings.HasPrefix(filepath.Base(o.model), "tiny-q8_0-") {
		t.Fatalf("model %q, want tiny-q8_0-KEY.gguf in %s", o.model, dir)
	}
	m, err := testmodel.ReadTokenizer(o.model) // a readable GGUF
	if err != nil || m == nil {
		t.Fatalf("reading %s: %v", o.model, err)
	}
	again := options{model: "bench:tiny-q8_0"}
	again.scale.dir = dir
	if err := resolveBenchModel(&again, io.Discard); err != nil || again.model != o.model {
		t.Errorf("second resolve: %q, %v; want the cached %q", again.model, err, o.model)
	}
	kept := options{model: "models/x.gguf"}
	if err := resolveBenchModel(&kept, io.Discard); err != nil || kept.model != "models/x.gguf" {
		t.Errorf("a path: %q, %v", kept.model, err)
	}
	bad := options{model: "bench:7b-q4_0"}
	bad.scale.dir = dir
	if err := resolveBenchModel(&bad, io.Discard); err == nil {
		t.Error("bench:7b-q4_0 resolved")
	}
}

// TestMoEShape: the moe bench shape loads as a Qwen3-MoE of 32 experts,
// 8 per token, and its Q4_K_M gives the down projections of the first
// layers Q6_K as llama.cpp does.
func TestMoEShape(t *testing.T) {
	s, err := benchSpec("moe-q4_k_m")
	if err != nil {
		t.Fatal(err)
	}
	if s.Arch != "qwen3moe" || s.Experts != 32 || s.ExpertsUsed != 8 || s.Types["blk.0.ffn_down_exps.weight"] != model.Q6_K {
		t.Errorf("spec %+v", s)
	}
}
