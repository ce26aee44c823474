//go:build cuda

// Command gpucheck is the Go half of `make gpu-check` (scripts/gpu-check.sh),
// built on a development machine and run on a GPU machine that has no Go:
//
//	gpucheck bench -out DIR [-suites ceilings,kernels,decode] [-batches 1,32,128] [-context 512] [-steps 32]
//	gpucheck shrink -layers N IN.gguf OUT.gguf
//
// bench writes DIR/bench.json and DIR/summary.md (a Markdown table, also
// printed). shrink keeps the first N layers of a GGUF model, so that the
// default model fits in what a GPU check may send along.
//
// It imports gpu/cuda (its exported benchmark API), enginecore/model and
// wire/gguf; it is built only with -tags cuda.
package main
