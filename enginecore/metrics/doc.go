// Package metrics is an engine core's own Prometheus endpoint (`tandem
// engine --metrics-address`): the engine-side series vLLM exports per
// engine (requests running and waiting, KV-cache usage, prefix-cache
// queries and hits, preemptions, the cache config, the sleep state) and
// Tandem's (free blocks, resident sessions), with vLLM's names, types and
// labels (model_name, engine), plus the process's go_* and process_*.
//
// Each engine exports its numbers once, so where frontends run as
// separate pods (each of which would otherwise repeat every engine's
// series) Prometheus and an external router read every engine from the
// engine itself, and the frontends run with --disable-engine-metrics.
// The names and help texts are frontend/metrics' (engines.go), which
// exports the same series from the heartbeats; the packages cannot share
// code (enginecore never imports frontend), so cmd/tandem's tests check
// both exports against each other. docs/metrics.md lists them.
//
//	m := metrics.New(metrics.Config{ModelName: "dummy", Engine: 0, BlockSize: 16, NumBlocks: 1024, Stats: core.Stats})
//	http.Handle("/metrics", m.Handler())
package metrics
