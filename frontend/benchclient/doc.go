// Package benchclient is the load generator behind `tandem bench`, after
// `vllm bench serve` and vLLM's benchmarks/multi_turn: it drives any
// OpenAI-compatible server over HTTP with streaming requests and measures
// TTFT, TPOT, ITL and end-to-end latency (mean, median, p90, p99), request
// and token throughput, and the prefix-cache hit rate the server reports
// in usage.prompt_tokens_details.cached_tokens.
//
// Datasets: random (independent prompts), prefix-repetition (a few shared
// prefixes with random suffixes) and multi-turn (conversations with a
// shared system prompt and a per-conversation document, each turn's
// question and the server's real answer carried into the next turn, one
// X-Session-ID per conversation). Arrivals are Poisson (RequestRate), with
// NumClients in flight. Reports: JSON (Run), Markdown tables
// (WriteMarkdown) and a PNG plot (WritePNG, drawn with the standard image
// packages and basicfont).
//
// It talks HTTP only and must not import enginecore or other frontend
// packages.
//
//	run, err := benchclient.Execute(ctx, benchclient.Config{
//		Label:      "session",
//		Target:     &benchclient.Target{BaseURL: "http://127.0.0.1:8000"},
//		Dataset:    benchclient.DatasetConfig{Name: benchclient.DatasetMultiTurn, NumConversations: 16, NumTurns: 5, ...},
//		NumClients: 4,
//	})
//	benchclient.WriteMarkdown(os.Stdout, []*benchclient.Run{run})
package benchclient
