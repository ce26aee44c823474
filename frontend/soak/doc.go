// Package soak is Tandem's load and leak checker, behind `make soak` (cmd/tandemsoak)
// and the short soak test in cmd/tandem: many concurrent clients drive a running server
// over HTTP with a mix of streaming completions, multi-turn chat sessions, requests the
// client cancels mid-stream, non-streaming requests and deliberately bad requests; every
// answer is put in a class (ok, cancelled, rejected bad request, 429/503 overload,
// unexpected 4xx, 5xx, stream error, transport error, timeout); the report has the counts
// per class, TTFT and end-to-end percentiles, the RSS of every server process sampled
// from /proc, and whether the server returned to idle afterwards (no running or waiting
// requests, no KV blocks in use, goroutines back to the baseline).
//
// Scrape and WaitIdle are also what the fault-injection tests use to check that nothing
// leaked.
//
// It talks HTTP (and reads /proc) only and must not import enginecore, wire or other
// frontend packages.
//
//	rep, err := soak.Run(ctx, soak.Config{
//		BaseURL:    "http://127.0.0.1:8000",
//		NumClients: 1000,
//		Duration:   time.Minute,
//		RootPID:    servePID, // RSS of this process and its children
//	})
//	if err != nil { … }
//	rep.WriteMarkdown(os.Stdout)
//	if f := rep.Failures(soak.Limits{}); len(f) > 0 { … }
package soak
