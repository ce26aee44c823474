// Command tandembench measures Tandem's CPU engine next to llama.cpp on the
// same GGUF, thread counts and prompt token ids, in the same run, and
// records the results: docs/benchmarks/cpu-DATE.json, a PNG plot
// docs/benchmarks/cpu-DATE.png, and a dated section of docs/benchmarks.md.
//
// Tandem runs in-process with no sockets: enginecore/loader →
// model.FromTensors → cpu.New → AllocateKV, then the scheduler
// (enginecore/sched over enginecore/kvcache) and enginecore/runner are
// driven step by step exactly as the engine core's step does (schedule →
// execute → update), greedy, ignore_eos, prefix caching off. llama.cpp runs
// as .cache/llamabench, our own C program (scripts/llamabench) linked
// against the prebuilt llama.cpp libraries, with flash attention off.
//
// Measurements, each the median of --reps repetitions after a warm-up:
//   - prefill tok/s: S·P / time of the step(s) computing the S prompts
//     (all prompts in one step);
//   - decode tok/s: S·D / time of the D decode steps (one token per stream
//     per step), aggregate over the S streams.
//
// --model runs the cpu phase on another GGUF, or on a random-weight one
// of the scale phase's shapes (bench:SHAPE-QUANT, written once into
// --scale-model-dir; make bench: bench:moe-q4_k_m, a Qwen3-MoE of 32
// experts); --tag names such a run (make bench: "gemma3" for Gemma 3
// 270M, "moe"), which then writes cpu-TAG-DATE.{json,png} and a doc
// section of its own.
//
// Configurations: single stream (P = --prompt-tokens, D = --gen-tokens)
// at every --threads, and the concurrency sweep --sweep (threads:streams
// lists, P = --stream-prompt-tokens, D = --stream-gen-tokens). Prompt ids
// are random (splitmix64 from --seed, see promptIDs), identical for both
// engines; stream s gets ids [s·P, (s+1)·P) of the sequence.
//
// While Tandem runs, GOMAXPROCS is set to the thread count, so both
// engines use the same number of OS threads for compute. Build with
// GOEXPERIMENT=simd, or Tandem runs its pure-Go kernels (it warns; the
// report names the kernels that ran, from kernels.Level).
//
// The structured phase (structured.go; --phase structured, or all) measures
// what constrained decoding costs the engine: at each of
// --structured-streams (1 and 64) the same prompts decode unconstrained and
// with every stream constrained by one json_schema, the two taking turns
// in every repetition; it reports both decode tok/s and their ratio, the
// schema's compile time, and the mask time per row and per step, timed by
// replaying the constrained streams' tokens through the engine's own
// compiled constraint. It writes docs/benchmarks/structured-DATE.json and
// the doc's structured section (between its tandembench:structured
// markers).
//
// The frontend phase (frontend*.go; --phase frontend, or all) measures the
// HTTP frontend's own cost: a real `tandem engine --device null` and
// `tandem frontend`, each its own process, streamed through at each of
// --frontend-streams; tok/s, tok/s per frontend core, TTFT over HTTP next
// to TTFT straight through frontend/engineclient, allocations per token
// and the msgpack codec's ns per message. It writes
// docs/benchmarks/frontend-DATE.json and the doc's frontend section.
//
// The scale phase (scale.go, memory.go; --phase scale, or all; --scale
// picks its parts) covers issue 16's larger models, long context and
// memory: random-weight GGUFs at 1B and 3B shape in Q4_0, Q4_K_M and Q8_0
// (benchmodel.go: written by enginecore/loader/testmodel, cached under
// .cache/benchmodels by a hash of the spec), single stream on every
// engine, with decode as a share of the DRAM read bandwidth measured in
// the same run (bandwidth.go); 2,048- and 8,192-token prompts on the
// default model, decode at that depth; and the peak RSS of `tandem serve`
// (supervisor, engine and frontend processes, one request) next to
// llama.cpp's bench process at the same context. It writes
// docs/benchmarks/scale-DATE.json and the doc's scale section (between
// its tandembench:scale markers).
//
// The model or the llama.cpp binary missing is an error wrapping
// ErrMissing (exit status 1) unless --no-llama.
//
// It imports enginecore/{loader,model,cpu,cpu/kernels,runner,sched,kvcache,structured}
// and wire; of frontend/ only engineclient, for the frontend phase's direct
// requests (no tokenizer, no server: the phase runs them as processes).
//
// Usage:
//
//	./scripts/oracle.sh && ./scripts/model.sh && ./scripts/llamabench/build.sh
//	GOEXPERIMENT=simd go run ./cmd/tandembench --out docs/benchmarks --doc docs/benchmarks.md
//	GOEXPERIMENT=simd go run ./cmd/tandembench --quick   # smoke test, output in a temp dir
//	GOEXPERIMENT=simd go run ./cmd/tandembench --phase structured   # constrained decoding only
//	GOEXPERIMENT=simd go run ./cmd/tandembench --phase scale --scale models   # 1B/3B models only
package main
