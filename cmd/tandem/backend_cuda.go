//go:build cuda

package main

import (
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/gpu/cuda"
)

// cudaBuild reports whether this binary has the CUDA backend (build tag
// cuda; backend_cpu.go is the other build).
const cudaBuild = true

// cudaStatus reports whether the CUDA driver loads and shows a device.
func cudaStatus() (ok bool, reason string) { return cuda.Available() }

// newBackend builds the backend for --device: the CPU backend for cpu,
// the CUDA backend on that device for cuda:N.
func newBackend(device string, cfg model.Config, w *model.Weights, threads int, opts cpuOptions) (runner.Backend, error) {
	ordinal, isCUDA, err := parseDevice(device)
	switch {
	case err != nil:
		return nil, err
	case !isCUDA:
		return newCPU(cfg, w, threads, opts)
	}
	b, err := cuda.New(cfg, w, cuda.Options{Device: ordinal})
	if err != nil {
		return nil, err
	}
	return b, nil
}
