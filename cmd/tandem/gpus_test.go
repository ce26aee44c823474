package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/gpu/nvml"
)

func TestParseDevice(t *testing.T) {
	tests := []struct {
		device  string
		ordinal int
		isCUDA  bool
		wantErr string // substring; "" for success
	}{
		{"cpu", 0, false, ""},
		{"null", 0, false, ""},
		{"null:10ms", 0, false, ""},
		{"null:x", 0, false, "want null or null:STEP"},
		{"null:fail-after=3", 0, false, ""},
		{"null:10ms,fail-after=3", 0, false, ""},
		{"null:fail-after=0", 0, false, "fail-after=N wants N ≥ 1"},
		{"nullx", 0, false, "want cpu or cuda:N"},
		{"cuda:0", 0, true, ""},
		{"cuda:3", 3, true, ""},
		{"cuda", 0, true, ""},
		{"cuda:", 0, false, "want cpu or cuda:N"},
		{"cuda:-1", 0, false, "want cpu or cuda:N"},
		{"cuda1", 0, false, "want cpu or cuda:N"},
		{"gpu", 0, false, "want cpu or cuda:N"},
	}
	for _, tt := range tests {
		t.Run(tt.device, func(t *testing.T) {
			ordinal, isCUDA, err := parseDevice(tt.device)
			want := tt.wantErr
			if want == "" && tt.isCUDA && !cudaBuild {
				want = "no CUDA backend"
			}
			switch {
			case want != "":
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("parseDevice(%q) = %v, want an error with %q", tt.device, err, want)
				}
			case err != nil:
				t.Errorf("parseDevice(%q): %v", tt.device, err)
			case ordinal != tt.ordinal || isCUDA != tt.isCUDA:
				t.Errorf("parseDevice(%q) = %d, %v; want %d, %v", tt.device, ordinal, isCUDA, tt.ordinal, tt.isCUDA)
			}
		})
	}
}

// planCase is one TestPlanDevices case.
type planCase struct {
	name    string
	set     map[string]bool
	device  string
	dp      int
	devs    []nvml.Device
	err     error
	cudaOK  bool
	want    []string
	wantLog string // substring of the log
	wantErr bool
}

func TestPlanDevices(t *testing.T) {
	h200 := func(i int) nvml.Device {
		return nvml.Device{Index: i, Name: "NVIDIA H200", UUID: fmt.Sprintf("GPU-%d", i), MemoryTotal: 141 << 30}
	}
	two := []nvml.Device{h200(0), h200(1)}
	tests := []planCase{
		{"no driver", nil, "cpu", 2, nil, nvml.ErrUnavailable, false, []string{"cpu", "cpu"}, "no NVIDIA driver found", false},
		{"NVML error", nil, "cpu", 1, nil, errors.New("boom"), true, []string{"cpu"}, "NVML: boom", false},
		{"hidden GPUs", nil, "cpu", 1, nil, nil, true, []string{"cpu"}, "no visible GPUs", false},
		{"explicit device", map[string]bool{"device": true}, "cuda:1", 2, two, nil, true, []string{"cuda:1", "cuda:1"}, "", false},
	}
	if cudaBuild {
		tests = append(tests,
			planCase{"CUDA not usable", nil, "cpu", 1, two, nil, false, []string{"cpu"}, "CUDA is not usable: driver too old", false},
			planCase{"one engine per GPU", nil, "cpu", 1, two, nil, true, []string{"cuda:0", "cuda:1"}, "engine on GPU", false},
			planCase{"first dp GPUs", map[string]bool{"data-parallel-size": true}, "cpu", 1, two, nil, true, []string{"cuda:0"}, "", false},
			planCase{"dp larger than GPUs", map[string]bool{"data-parallel-size": true}, "cpu", 3, two, nil, true, nil, "", true})
	} else {
		tests = append(tests,
			planCase{"GPUs but no CUDA backend", nil, "cpu", 1, two, nil, true, []string{"cpu"}, "this binary has no CUDA backend", false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			set := tt.set
			if set == nil {
				set = map[string]bool{}
			}
			got, err := planDevices(set, tt.device, tt.dp, tt.devs, tt.err, tt.cudaOK, "driver too old", log)
			if (err != nil) != tt.wantErr {
				t.Fatalf("planDevices: error %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
			if !strings.Contains(buf.String(), tt.wantLog) {
				t.Errorf("log %q lacks %q", buf.String(), tt.wantLog)
			}
		})
	}
}

// budgeter is a backend whose KV budget is fixed.
type budgeter struct {
	runner.Backend
	budget   int64
	gotUtil  float64
	gotToks  int
	gotSeqs  int
	perBlock int64
}

func (b *budgeter) KVBudget(u float64, maxTokens, maxSeqs int) (int64, error) {
	b.gotUtil, b.gotToks, b.gotSeqs = u, maxTokens, maxSeqs
	return b.budget, nil
}
func (b *budgeter) KVBytesPerBlock(int) int64 { return b.perBlock }

func TestDeviceKVBlocks(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	f := engineFlags{blockSize: 16, maxModelLen: 1024, maxNumSeqs: 8, maxNumBatchedTokens: 512, gpu: gpuFlags{memoryUtilization: 0.8}}
	be := &budgeter{budget: 1000 << 20, perBlock: 1 << 20}
	n, err := deviceKVBlocks(f, closer{Backend: be, release: func() error { return nil }}, log)
	if err != nil {
		t.Fatal(err)
	}
	// The whole budget (1000 blocks), not capped at 8 × 64 blocks as on the CPU.
	if n != 1000 || be.gotUtil != 0.8 || be.gotToks != 512 || be.gotSeqs != 8 {
		t.Errorf("blocks %d (KVBudget(%g, %d, %d)), want 1000 (KVBudget(0.8, 512, 8))", n, be.gotUtil, be.gotToks, be.gotSeqs)
	}
	f.kvCacheMemory = "64Mi" // explicit size wins; the scratch is still reserved
	be.gotToks = 0
	if n, err := deviceKVBlocks(f, be, log); err != nil || n != 64 || be.gotToks != 512 {
		t.Errorf("with --kv-cache-memory 64Mi: %d blocks, %v (reserved for %d tokens); want 64", n, err, be.gotToks)
	}
}

func TestPrintGPUs(t *testing.T) {
	s := nvml.System{DriverVersion: "580.159.03", CUDADriverVersion: 13000, Devices: []nvml.Device{
		{Index: 0, NVMLIndex: 3, UUID: "GPU-abc", Name: "NVIDIA H200", MemoryTotal: 143771 << 20, MemoryFree: 143000 << 20, ComputeMajor: 9},
	}}
	var b strings.Builder
	if err := printGPUs(&b, s, false, "no CUDA backend", false); err != nil {
		t.Fatal(err)
	}
	want := `driver 580.159.03, CUDA 13.0
DEVICE  NAME         MEMORY (MiB)  FREE (MiB)  COMPUTE  NVML INDEX  UUID
cuda:0  NVIDIA H200  143771        143000      sm_90    3           GPU-abc
CUDA backend: not usable: no CUDA backend
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	b.Reset()
	if err := printGPUs(&b, s, true, "", true); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"driver_version": "580.159.03"`, `"uuid": "GPU-abc"`, `"cuda_backend": true`, `"nvml_index": 3`} {
		if !strings.Contains(b.String(), frag) {
			t.Errorf("JSON lacks %s:\n%s", frag, b.String())
		}
	}
}
