package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Markers of the frontend section in the doc (one, the latest run).
const (
	frontendBegin = "<!-- tandembench:frontend:begin -->"
	frontendEnd   = "<!-- tandembench:frontend:end -->"
)

// frontendProfile is what profiling the frontend under this phase found
// and what was fixed, with the before/after numbers of the commits (kept
// here so every regenerated section says it).
const frontendProfile = `What the profile showed (perf on the frontend process, 64 and 512 streams, 2026-12-02) and what was fixed:

- 60% of the frontend's CPU was writing SSE events: half of it one ` + "`write`" + ` syscall per token
  (a flush per event), a quarter ` + "`json.Marshal`" + ` of each chunk (reflection, then re-compacting the
  output of ` + "`MarshalJSON`" + `). Now ` + "`openai.ChatCompletionChunk.AppendJSON`" + ` writes the common chunk
  directly (byte for byte ` + "`json.Marshal`" + `'s; 4.8 µs and 5 allocations → 0.35 µs and none), the
  event buffer is reused, and a stream flushes only when no further event is ready.
- Per token, the chunk, its choice and strings, a heap copy of the event and (when a stream
  is read as fast as it is fed) engineclient's pending queue were allocated; they are reused.
- Before → after, same machine and session, best of two (load average 10–13 on 2 cores):
  1 stream 37,342 → 55,775 tok/s per frontend core; 64 streams 59,850 → 120,250;
  512 streams 60,402 → 106,563. Allocations per token 36.6 → 26.8, 14.6 → 4.2, 13.9 → 3.7.
- Added TTFT did not move: 2.43 ms p50 at 64 paced streams before, 2.40 ms after (jittered
  arrivals; without the jitter, closed-loop arrivals lock to the engine's steps and single runs
  swing between −1 and +6 ms). The response headers, flushed with the role chunk once the
  request is submitted, arrive at 0.55–0.76 ms p50 (1 and 64 streams): that is the intake
  (HTTP, JSON, template, tokenizer, ADD) and about all of the 0.6 ms added at 1 stream. The
  rest at 64 streams lies between the engine's output and the chunk reaching the client —
  the frontend's own TTFT histogram (submission to first token) is already ~2 ms above the
  direct client's: on these 2 shared cores the frontend works through each step's burst of
  64 outputs, and the load generator parses 64 SSE streams, before the new request's first
  token gets through. Delivering a step's first tokens first made it worse (3.2 and 3.9 ms,
  single unpaired runs at that load) and was reverted; see 2026-12-06 below. Not met here.
- 2026-12-06, traced per request at 64 paced streams (timestamps in the load generator, the
  frontend and the engine's own events): the frontend's code took 54 µs p50 from the
  handler's entry to the ADD, and 12 µs from its follow goroutine getting the first token to
  the chunk written. The rest was waiting: 180 µs p50 from the client's write to the handler
  (a core waking to read the request), and 200 µs p50 (343 mean) for the load generator to
  read the written chunk. Changed:
  - First tokens first: an OUTPUTS carries a token for every running request and a new one
    sits last, so its first token waited for 64 others to be delivered and written;
    engineclient now pushes first outputs first. Per pair p50 0.56–0.68 → 0.31–0.50 ms.
  - The load generator writes and reads one keep-alive connection per stream itself
    (` + "`http.Request.Write`, `http.ReadResponse`" + `): net/http's Transport added two goroutine
    hand-offs per request and per chunk on the cores the frontend shares. Headers at 1 paced
    stream 650–800 → 460–545 µs.
  - The measurement: separate HTTP and direct runs at random phases of a 10 ms step moved
    p50s by ±0.4 ms from run to run (the direct run alone 16.7–17.3 ms); each request now has
    a twin sent straight to the engine at the same moment (at 1 stream the idle engine starts
    a step per request, so there the runs stay one after the other). Added p50 is still the
    difference of the p50s, which also counts the requests whose later arrival missed the
    twin's step; the per-pair p50 does not.
  - The floor here: a bare Go HTTP server answers a flushed response in 78 µs p50 back to
    back but in 254 µs when each request finds the cores idle (7 ms apart). Waking idle vCPUs
    is most of what stays at 1 stream.
  - Tried and dropped: Send writing the ZeroMQ wake-up itself (no goroutine hop before the
    socket thread): 1 stream +90 µs, 64 streams within noise. GOGC=off or GOMAXPROCS=1 for
    the frontend: no gain.
- What is left: one ` + "`write`" + ` per token per connection (a third of the CPU at 512 streams; each
  stream is its own socket), decoding each OUTPUTS' scheduler stats (a map with string keys,
  7% of the CPU at 1 stream, where every token is its own message), goroutine hand-offs
  (reader → follow → stream: selectgo ≈ 9%). At 512 streams behind a 10 ms engine
  (51,200 tok/s asked) this machine's shared cores saturate and TTFT queues.
`

// spliceFrontend puts section in place of the doc's frontend section,
// else before the dated CPU sections, else at the end.
func spliceFrontend(doc, section string) string {
	if i := strings.Index(doc, frontendBegin); i >= 0 {
		if j := strings.Index(doc[i:], frontendEnd); j >= 0 {
			return doc[:i] + strings.TrimSuffix(section, "\n") + doc[i+j+len(frontendEnd):]
		}
	}
	if i := strings.Index(doc, sectionsMarker); i >= 0 {
		return doc[:i] + section + "\n" + doc[i:]
	}
	if doc != "" && !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	return doc + "\n" + section
}

// renderFrontend is rep as markdown, markers included.
func renderFrontend(rep *FrontendReport, jsonPath string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s\n", frontendBegin)
	p("### The frontend's own cost, with a null engine (%s)\n\n", rep.Date)
	if rep.Quick {
		p("**Quick smoke run (`--quick`): not a measurement.**\n\n")
	}
	p("`make bench`'s frontend phase on %s, %d logical cores (shared by the engine, the frontend and the load generator; load average %s at the start). "+
		"`tandem %s` (no forward pass: every step returns its tokens at once; scheduler, KV manager, sampler, ZeroMQ and msgpack real) "+
		"serves `tandem %s`, each its own process. At each stream count S, S clients stream `/v1/chat/completions` back to back "+
		"(their own prompt each, %d tokens after the chat template; max_tokens D = %d; `stream_options.include_usage`), "+
		"after one warm-up request per stream. tok/s is completion tokens (from usage) over wall time; "+
		"per frontend core divides by the frontend process's CPU seconds (utime + stime, /proc/PID/stat). "+
		"TTFT is to the first chunk with content. Direct: the same token ids and count of requests straight to the engine through the Go "+
		"engine client (frontend/engineclient), from the bench process. Unpaced, the engine steps as fast as it can and outruns the frontend, "+
		"so TTFT there is mostly outputs queued in the ZeroMQ pipe; the frontend's mean TTFT (its own histogram, submission to first token) "+
		"and the engine's mean queue time show where it goes. "+
		"Allocations per token: the frontend's go_memstats counters (/metrics) over the run.\n\n",
		orUnknown(rep.Machine.CPU), rep.Machine.Cores, orUnknown(rep.Machine.LoadAvgStart), rep.Engine, rep.Frontend, rep.PromptToken, rep.GenTokens)
	p("| streams | requests | tok/s | frontend CPU s | tok/s per frontend core | engine CPU s | allocs / token | bytes / token | TTFT p50 / p99 | frontend's mean TTFT | engine queue mean | direct TTFT p50 / p99 | direct tok/s |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|\n")
	for _, r := range rep.Rows {
		p("| %d | %d | %.0f | %.2f | **%.0f** | %.2f | %.1f | %.0f | %s / %s | %s | %s | %s / %s | %.0f |\n",
			r.Streams, r.Requests, r.TokS, r.FrontendCPU, r.TokSPerCore, r.EngineCPU, r.AllocsPerToken, r.BytesPerToken,
			fmtUS(r.TTFT.P50), fmtUS(r.TTFT.P99), fmtUS(r.FrontendTTFTus), fmtUS(r.QueueUs),
			fmtUS(r.DirectTTFT.P50), fmtUS(r.DirectTTFT.P99), r.DirectTokS)
	}
	if rep.PacedEngine != "" {
		p("\nAdded TTFT, paced: `tandem %s`, every step %.1f ms as on a device; each stream sends %d requests of max_tokens %d, "+
			"each after a random wait below one step (so arrivals do not lock to the engine's steps). "+
			"With one stream the engine is idle when a request arrives and starts a step at once: the requests go over HTTP, then the same straight to the engine. "+
			"With more streams a request waits for the running step to end, which depends on where in the step it arrives; so each request goes over HTTP "+
			"and, at the same moment, as a twin straight to the engine (paired: the twins are the direct column, and the engine serves twice the streams). "+
			"Added is the HTTP percentile less the direct one; per pair is the percentiles of each request's TTFT less its twin's.\n\n",
			rep.PacedEngine, rep.StepTimeMs, rep.TTFTRequests, rep.TTFTGenTokens)
		p("| streams | requests | tok/s | TTFT p50 / p99 | headers (TTFB) p50 | frontend's mean TTFT | direct TTFT p50 / p99 | added TTFT p50 / p99 | per pair p50 / mean |\n|---:|---:|---:|---|---:|---:|---|---|---|\n")
		for _, r := range rep.Rows {
			if q := r.Paced; q != nil {
				pair := "— (one after the other)"
				if q.Paired {
					pair = fmtSignedUS(q.PairAddedUs.P50) + " / " + fmtSignedUS(q.PairAddedUs.Mean)
				}
				p("| %d | %d | %.0f | %s / %s | %s | %s | %s / %s | **%s** / %s | %s |\n", r.Streams, q.Requests, q.TokS,
					fmtUS(q.TTFT.P50), fmtUS(q.TTFT.P99), fmtUS(q.TTFB.P50), fmtUS(q.FrontendTTFTus), fmtUS(q.DirectTTFT.P50), fmtUS(q.DirectTTFT.P99),
					fmtSignedUS(q.AddedTTFTus.P50), fmtSignedUS(q.AddedTTFTus.P99), pair)
			}
		}
	}
	p("\nmsgpack alone (package wire, in the bench process; best of three loops):\n\n")
	p("| message | payload bytes | encode | decode | encode allocs | decode allocs | encode + decode per output |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range rep.Wire {
		per := "—"
		if w.Outputs > 0 {
			per = fmt.Sprintf("%.0f ns", (w.EncodeNs+w.DecodeNs)/float64(w.Outputs))
		}
		p("| %s | %d | %.0f ns | %.0f ns | %.0f | %.0f | %s |\n", w.Message, w.Bytes, w.EncodeNs, w.DecodeNs, w.EncodeAllo, w.DecodeAllo, per)
	}
	p("\n| target | want | measured | met |\n|---|---|---:|---|\n")
	for _, t := range rep.Targets {
		p("| %s | %s | %.2f | %s |\n", t.Name, t.Want, t.Value, metWord(t.Met))
	}
	p("\nRaw numbers: [%s](%s). Run took %.0f s.\n\n", filepath.Base(jsonPath), jsonPath, rep.Seconds)
	p("%s", frontendProfile)
	p("%s\n", frontendEnd)
	return b.String()
}

// fmtSignedUS is fmtUS for a difference, which may be negative.
func fmtSignedUS(us float64) string {
	if us < 0 {
		return "−" + fmtUS(-us)
	}
	return fmtUS(us)
}
