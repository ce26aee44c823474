// Package detok turns a stream of output token ids into text deltas and cuts
// the text at stop strings, with vLLM's detokenizer semantics.
//
// [Detokenizer] never emits broken UTF-8: bytes of an incomplete UTF-8
// sequence are held back until the sequence completes, and an invalid
// sequence becomes one U+FFFD per maximal invalid subpart (the Unicode
// recommendation, as Python's errors="replace" and Rust's from_utf8_lossy do)
// as soon as it is known to be invalid. [Text] is the one-shot form.
//
// [StopChecker] applies stop strings to those deltas: the stop string that
// completes earliest wins, matches may span deltas, and text that might begin
// a stop string is held back until it is known not to (unless the stop string
// is to be included in the output, in which case nothing is held back).
//
// [Sequence] puts them together for one output sequence as the engine
// reports it (the EOS or stop token hidden, stop strings after
// min_tokens); the HTTP server and the Go text API share it.
//
// The package is pure: it imports neither echo nor anything from enginecore,
// gpu or wire. Values are not safe for concurrent use; use one per request.
//
// Usage:
//
//	d := detok.New(tok, req.SkipSpecial())
//	sc := detok.NewStopChecker(req.Stop, req.IncludeStopStrInOutput)
//	for out := range outputs {
//		emit, stopped, which := sc.Push(d.Add(out.NewTokenIDs))
//		send(emit)
//		if stopped { abort(); finish("stop", which); return }
//	}
//	emit, stopped, which := sc.Push(d.Flush()) // engine finished
//	send(emit + sc.Flush())
package detok
