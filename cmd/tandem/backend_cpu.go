//go:build !cuda

package main

import (
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// cudaBuild reports whether this binary has the CUDA backend (build tag
// cuda; see backend_cuda.go).
const cudaBuild = false

// cudaStatus says why the CUDA backend cannot be used.
func cudaStatus() (ok bool, reason string) {
	return false, "this binary was built without the CUDA backend (build with -tags cuda: make build-cuda)"
}

// newBackend builds the backend for --device; parseDevice has already
// refused anything but cpu in this build.
func newBackend(device string, cfg model.Config, w *model.Weights, threads int, opts cpuOptions) (runner.Backend, error) {
	if _, _, err := parseDevice(device); err != nil {
		return nil, err
	}
	return newCPU(cfg, w, threads, opts)
}
