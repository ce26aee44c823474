// Command tandemsoak is `make soak`: it starts `tandem serve --model dummy
// --data-parallel-size 2` (or targets a running server with --url), drives it with
// package soak's mix of concurrent streaming clients, sessions, cancellations and bad
// requests, optionally SIGKILLs engines on a timer, and writes the report (errors by
// class, p99 latencies, RSS per process, faults injected, leaks) as Markdown and JSON.
// It exits 1 when the report lists a failure.
//
//	go build -o bin/tandem ./cmd/tandem
//	go run ./cmd/tandemsoak --tandem bin/tandem --clients 1000 --duration 60s \
//	    --kill-engine-every 20s --markdown soak.md
package main
