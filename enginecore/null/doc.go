// Package null is a runner.Backend that computes nothing: Forward writes
// logits that make the next token of every sequence a fixed function of
// how many tokens it has generated, at once, with no forward pass and no
// KV cache behind the block ids. It is `tandem engine --device null`, a
// benchmarking aid: the engine core's scheduler, KV manager, sampler and
// wire stay real, so what a benchmark measures is everything around the
// model — the frontend, ZeroMQ and msgpack (cmd/tandembench's frontend
// phase).
//
// The i-th generated token of a request is Script[i mod len(Script)]
// (i from 0); Script spells a sentence in the model's vocabulary (see
// NewScript), so a frontend detokenizes real text. A sampler with any
// temperature, top-k, top-p or penalty still picks it: its logit is
// Margin above every other.
//
// NewPaced makes each forward pass last a given step time, as a device
// would (`--device null:10ms`), so a benchmark can load the frontend at a
// realistic token rate instead of as fast as the engine core can step.
//
// FailAfter makes every forward pass after the next N fail
// (`--device null:fail-after=N`): the engine core then dies as on a
// device error, for tests of how frontends learn it.
//
// It imports nothing of the engine but runner.
//
//	be, err := null.New(info, null.NewScript(vocab.Pieces, null.Text, info.EOSTokenIDs))
//	core, err := enginecore.New(cfg, be)
package null
