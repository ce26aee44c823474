// Package runner turns a scheduler batch into one forward pass and samples
// the next tokens. It defines the Backend interface it consumes (the
// pure-Go CPU backend in enginecore/cpu, the CUDA backend in gpu/cuda).
//
// Dimension glossary, used in shape comments across the engine:
// T = tokens in one step (all requests together), S = sequences in the
// step, L = layers, V = vocab size, H = query heads, Hkv = KV heads,
// D = head dim, B = block size (tokens per KV block).
//
// The runner knows nothing of sockets or the scheduler's queues; it reads
// a batch.Batch and returns a batch.Result.
//
//	r := runner.New(backend)
//	res, err := r.Execute(ctx, b)
package runner
