package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/gpu/nvml"
)

// GPU plumbing of the tandem command: `tandem gpus`, serve's choice of one
// engine per GPU, `--device` checking and KV sizing from device memory.
// The CUDA backend itself comes from backend_cuda.go (build tag cuda) or
// is absent (backend_cpu.go).

// runGPUs is `tandem gpus`: the NVIDIA GPUs this process may use, or "no
// NVIDIA driver found" (exit 0) on machines without one.
func runGPUs(_ context.Context, args []string) error {
	var asJSON bool
	if err := gpusCommand(&asJSON).Parse(args); err != nil {
		return err
	}
	s, err := nvml.Probe()
	if errors.Is(err, nvml.ErrUnavailable) {
		fmt.Println("no NVIDIA driver found")
		return nil
	}
	if err != nil {
		return err
	}
	ok, why := cudaStatus()
	return printGPUs(os.Stdout, s, ok, why, asJSON)
}

// gpusCommand is `tandem gpus`'s command line.
func gpusCommand(asJSON *bool) *cli.Command {
	c := cli.New("tandem gpus", "List the NVIDIA GPUs this process may use (CUDA_VISIBLE_DEVICES applies) "+
		"and whether this binary's CUDA backend can use them.", cli.Group{Title: "Output", Flags: []string{"json"}})
	c.Flags.BoolVar(asJSON, "json", false, "print the devices as JSON")
	return c
}

// printGPUs writes what `tandem gpus` shows: the driver, a table of the
// devices, and whether the CUDA backend can use them (ok, or why not).
func printGPUs(w io.Writer, s nvml.System, ok bool, why string, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			nvml.System
			CUDABackend bool   `json:"cuda_backend"`
			Reason      string `json:"cuda_backend_reason,omitempty"`
		}{s, ok, why})
	}
	fmt.Fprintf(w, "driver %s, CUDA %d.%d\n", s.DriverVersion, s.CUDADriverVersion/1000, s.CUDADriverVersion%1000/10)
	if len(s.Devices) == 0 {
		fmt.Fprintln(w, "no visible GPUs (CUDA_VISIBLE_DEVICES hides them)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DEVICE\tNAME\tMEMORY (MiB)\tFREE (MiB)\tCOMPUTE\tNVML INDEX\tUUID")
		for _, d := range s.Devices {
			fmt.Fprintf(tw, "cuda:%d\t%s\t%d\t%d\tsm_%d%d\t%d\t%s\n", d.Index, d.Name, d.MemoryTotal>>20, d.MemoryFree>>20,
				d.ComputeMajor, d.ComputeMinor, d.NVMLIndex, d.UUID)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if ok {
		fmt.Fprintln(w, "CUDA backend: ready")
	} else {
		fmt.Fprintln(w, "CUDA backend: not usable:", why)
	}
	return nil
}

// serveDevices returns the --device of each engine serve starts. An
// explicit --device goes to all dp engines. Otherwise, when NVML finds
// GPUs and this binary has a usable CUDA backend, it is one engine per
// visible GPU (cuda:0 … cuda:N-1; with --data-parallel-size, the first
// dp); failing that, dp CPU engines, and the log says why.
func serveDevices(set map[string]bool, device string, dp int, log *slog.Logger) ([]string, error) {
	if set["device"] {
		return planDevices(set, device, dp, nil, nil, true, "", log)
	}
	devs, err := nvml.Devices()
	ok, why := cudaStatus()
	return planDevices(set, device, dp, devs, err, ok, why, log)
}

// planDevices is serveDevices' decision, given NVML's answer (devs, err)
// and the CUDA backend's (cudaOK, why).
func planDevices(set map[string]bool, device string, dp int, devs []nvml.Device, err error, cudaOK bool, why string, log *slog.Logger) ([]string, error) {
	same := func(d string) []string {
		out := make([]string, dp)
		for i := range out {
			out[i] = d
		}
		return out
	}
	if set["device"] {
		return same(device), nil
	}
	reason := ""
	switch {
	case errors.Is(err, nvml.ErrUnavailable):
		reason = "no NVIDIA driver found"
	case err != nil:
		reason = "NVML: " + err.Error()
	case len(devs) == 0:
		reason = "no visible GPUs"
	case !cudaBuild:
		reason = fmt.Sprintf("%d GPU(s) found, but this binary has no CUDA backend (build with -tags cuda: make build-cuda)", len(devs))
	case !cudaOK:
		reason = fmt.Sprintf("%d GPU(s) found, but CUDA is not usable: %s", len(devs), why)
	}
	if reason != "" {
		log.Info("starting CPU engines", "engines", dp, "why", reason)
		return same("cpu"), nil
	}
	if set["data-parallel-size"] {
		if dp > len(devs) {
			return nil, fmt.Errorf("serve: --data-parallel-size %d, but only %d GPU(s) are visible", dp, len(devs))
		}
		devs = devs[:dp]
	}
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = "cuda:" + strconv.Itoa(d.Index)
		log.Info("engine on GPU", "engine", i, "device", out[i], "name", d.Name, "memory_mib", d.MemoryTotal>>20, "uuid", d.UUID)
	}
	return out, nil
}

// parseDevice checks --device: "cpu", "null" or "null:OPTIONS" (backend_null.go), or
// "cuda:N" / "cuda" (cuda:0) in a binary with the CUDA backend. It returns
// the CUDA ordinal, or ok false for the CPU and null.
func parseDevice(device string) (ordinal int, ok bool, err error) {
	if device == "cpu" {
		return 0, false, nil
	}
	if _, isNull, err := parseNull(device); isNull {
		return 0, false, err
	}
	rest, isCUDA := strings.CutPrefix(device, "cuda")
	if isCUDA && rest != "" {
		var found bool
		rest, found = strings.CutPrefix(rest, ":")
		if n, perr := strconv.Atoi(rest); !found || perr != nil || n < 0 {
			isCUDA = false
		} else {
			ordinal = n
		}
	}
	switch {
	case !isCUDA:
		return 0, false, fmt.Errorf("--device %q: want cpu or cuda:N, or null", device)
	case !cudaBuild:
		return 0, false, fmt.Errorf("--device %q: this binary has no CUDA backend (build with -tags cuda: make build-cuda)", device)
	}
	return ordinal, true, nil
}

// gpuFlags are the engine's GPU flags.
type gpuFlags struct {
	memoryUtilization float64 // fraction of device memory for weights, activations and the KV cache
}

func (g *gpuFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&g.memoryUtilization, "gpu-memory-utilization", 0.9,
		"on a GPU, the `fraction` of its memory this engine may use (weights, activations, KV cache); the KV cache gets what is left (--kv-cache-memory overrides)")
}

// kvBudgeter is a backend that sizes the KV cache from device memory (the
// CUDA backend).
type kvBudgeter interface {
	KVBudget(utilization float64, maxTokens, maxSeqs int) (int64, error)
}

// deviceKVBlocks sizes the KV pool. A GPU backend first reserves its
// scratch for the largest step, then, unless --kv-cache-memory is given,
// gets --gpu-memory-utilization of the device less what it holds; the CPU
// backend is sized by kvBlocks alone.
func deviceKVBlocks(f engineFlags, be runner.Backend, log *slog.Logger) (int, error) {
	inner := be
	if c, ok := be.(closer); ok {
		inner = c.Backend
	}
	g, ok := inner.(kvBudgeter)
	if !ok {
		return kvBlocks(f, be, log)
	}
	budget, err := g.KVBudget(f.gpu.memoryUtilization, f.maxNumBatchedTokens, f.maxNumSeqs)
	if err != nil {
		return 0, fmt.Errorf("engine: %w", err)
	}
	if f.kvCacheMemory == "" {
		f.kvCacheMemory = strconv.FormatInt(budget, 10)
		log.Info("KV cache budget from device memory", "gpu_memory_utilization", f.gpu.memoryUtilization,
			"gib", float64(budget)/(1<<30))
	}
	return kvBlocks(f, be, log)
}

// cpuOptions are the CPU backend's settings from the engine's flags.
type cpuOptions struct {
	precision cpu.Precision // --cpu-precision
	kvDtype   cpu.KVDtype   // --kv-cache-dtype
	packDir   string        // --weights-cache-dir, resolved: "" packs into memory
}

// weightsCacheDir resolves --weights-cache-dir: auto is the user's cache
// directory (none if it has none), off is none.
func weightsCacheDir(flag string) string {
	switch flag {
	case "off", "":
		return ""
	case "auto":
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(d, "tandem", "packed")
	}
	return flag
}

// newCPU is cpu.New as a runner.Backend (nil on error, not a nil pointer).
func newCPU(cfg model.Config, w *model.Weights, threads int, opts cpuOptions) (runner.Backend, error) {
	b, err := cpu.New(cfg, w, threads, cpu.WithPackCache(opts.packDir))
	if err != nil {
		return nil, err
	}
	b.SetPrecision(opts.precision)
	b.SetKVDtype(opts.kvDtype)
	return b, nil
}
