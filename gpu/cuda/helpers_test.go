//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/gpu/cuda/emu"
)

// EnvTestDevices picks the devices tests run on: a comma list of "emu"
// (the CPU emulator) and "cuda" (CUDA device 0); default both. The GPU
// check runs "cuda" only.
const EnvTestDevices = "TANDEM_CUDA_TEST_DEVICES"

// forDevices runs fn once per test device as a subtest: "emu" always,
// "cuda" when a CUDA device is available (skipped, with the reason,
// otherwise; failed instead when $TANDEM_REQUIRE_GPU is set, as the GPU
// check sets it).
func forDevices(t *testing.T, fn func(t *testing.T, dev device)) {
	t.Helper()
	want := os.Getenv(EnvTestDevices)
	if want == "" {
		want = "emu,cuda"
	}
	for _, name := range strings.Split(want, ",") {
		t.Run(name, func(t *testing.T) {
			dev := openTestDevice(t, name)
			t.Cleanup(func() { dev.Close() })
			fn(t, dev)
		})
	}
}

// openTestDevice opens "emu" or "cuda" (skipping when there is none).
func openTestDevice(t *testing.T, name string) device {
	t.Helper()
	switch name {
	case "emu":
		return emu.New(8 << 30)
	case "cuda":
		if ok, why := Available(); !ok {
			if os.Getenv("TANDEM_REQUIRE_GPU") != "" {
				t.Fatalf("TANDEM_REQUIRE_GPU is set, but there is no CUDA device: %s", why)
			}
			t.Skipf("no CUDA device: %s", why)
		}
		dr, err := openDriver(0)
		if err != nil {
			t.Fatalf("opening CUDA device 0: %v", err)
		}
		t.Logf("device %s (sm_%d%d, %d SMs), kernels from %s", dr.name, dr.ccMajor, dr.ccMinor, dr.numSMs, dr.moduleOf)
		return dr
	}
	t.Fatalf("%s: unknown test device %q", EnvTestDevices, name)
	return nil
}

// newRand returns a generator seeded from $TANDEM_TEST_SEED or the clock,
// and logs the seed so a failure can be replayed.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TANDEM_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("TANDEM_TEST_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, 1))
}

func normals(r *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * std)
	}
	return v
}

// NaN patterns that outputs are filled with before a kernel runs, so an
// element the kernel forgot stays NaN.
const (
	nanF32  = 0x7fc0dead
	nanBF16 = 0x7fc17fc1 // two bf16 NaNs
)

// devBuf allocates bytes on dev (freed at cleanup), filled with fill
// (32-bit pattern).
func devBuf(t *testing.T, dev device, bytes int, fill uint32) uintptr {
	t.Helper()
	p, err := dev.Alloc(int64(max(bytes, 4)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Free(p) })
	if err := dev.Memset32(p, fill, int64(max(bytes, 4)/4)); err != nil {
		t.Fatal(err)
	}
	return p
}

// toDev copies a slice of fixed-size values to a new device buffer.
func toDev[T any](t *testing.T, dev device, v []T) uintptr {
	t.Helper()
	var zero T
	n := len(v) * int(unsafe.Sizeof(zero))
	p := devBuf(t, dev, n, 0)
	if n > 0 {
		if err := dev.CopyHtoD(p, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), n)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// fromDev copies n values back from p.
func fromDev[T any](t *testing.T, dev device, p uintptr, n int) []T {
	t.Helper()
	v := make([]T, n)
	if n == 0 {
		return v
	}
	var zero T
	if err := dev.CopyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), n*int(unsafe.Sizeof(zero))), p); err != nil {
		t.Fatal(err)
	}
	return v
}

func testOps(t *testing.T, dev device) *ops {
	t.Helper()
	o, err := newOps(dev)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func bf16s(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = model.F32ToBF16(x)
	}
	return out
}

func unbf16(v []uint16) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(model.BF16ToF32(x))
	}
	return out
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// relErr is ‖got − want‖ / ‖want‖; +Inf when got has a NaN or Inf.
func relErr(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
			return math.Inf(1)
		}
		d := got[i] - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// firstDiff is the first index where got and want differ bit for bit.
func firstDiff[T comparable](got, want []T) (int, bool) {
	for i := range want {
		if got[i] != want[i] {
			return i, true
		}
	}
	return 0, false
}

// smDevice is a device that only answers NumSMs (for planning tests).
type smDevice struct {
	device
	numSMs int
}

func (d smDevice) NumSMs() int { return d.numSMs }

func fakeSMs(n int) device { return smDevice{numSMs: n} }

func modelCfg(numHeads, numKVHeads int) model.Config {
	return model.Config{NumHeads: numHeads, NumKVHeads: numKVHeads}
}

// defaultModelWeights loads $TANDEM_MODEL (make test sets it to the
// default model) as the engine does, keeping at most its first layers (0:
// all); why says what is missing when it cannot. The file stays mapped
// until t ends.
func defaultModelWeights(t *testing.T, layers int) (cfg model.Config, w *model.Weights, why string) {
	t.Helper()
	path := os.Getenv("TANDEM_MODEL")
	if path == "" {
		return cfg, nil, "TANDEM_MODEL not set (make test sets it to the default model)"
	}
	if _, err := os.Stat(path); err != nil {
		return cfg, nil, fmt.Sprintf("default model not found: %v (make model fetches it)", err)
	}
	m, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if w, err = model.FromTensors(m.Config, m.Tensors); err != nil {
		t.Fatal(err)
	}
	cfg = m.Config
	if layers > 0 && layers < cfg.NumLayers {
		cfg.NumLayers, w.Layers = layers, w.Layers[:layers]
	}
	return cfg, w, ""
}

// rowsModel is the random model of the row-order tests (a Q8_0 Llama of
// 2 layers, tied embeddings) and its CPU backend, the reference; the
// backend closes when t ends.
func rowsModel(t *testing.T, seed uint64) (model.Config, *model.Weights, *cpu.Backend) {
	t.Helper()
	cfg := model.Config{Arch: "llama", VocabSize: 300, Dim: 128, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
		HeadDim: 32, FFNDim: 256, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 256, TiedEmbeddings: true}
	w, err := model.Random(cfg, model.RandomTypes{Matrix: model.Q8_0, Embed: model.Q8_0}, seed)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cpu.New(cfg, w, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	return cfg, w, ref
}
