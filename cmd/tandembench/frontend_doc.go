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
		p("\nAdded TTFT, paced: `tandem %s`, every step %.1f ms as on a device; each stream sends %d requests of max_tokens %d "+
			"over HTTP, then the same straight to the engine; added is the HTTP percentile less the direct one.\n\n",
			rep.PacedEngine, rep.StepTimeMs, rep.TTFTRequests, rep.TTFTGenTokens)
		p("| streams | requests | tok/s | TTFT p50 / p99 | direct TTFT p50 / p99 | added TTFT p50 / p99 |\n|---:|---:|---:|---|---|---|\n")
		for _, r := range rep.Rows {
			if q := r.Paced; q != nil {
				p("| %d | %d | %.0f | %s / %s | %s / %s | **%s** / %s |\n", r.Streams, q.Requests, q.TokS,
					fmtUS(q.TTFT.P50), fmtUS(q.TTFT.P99), fmtUS(q.DirectTTFT.P50), fmtUS(q.DirectTTFT.P99),
					fmtSignedUS(q.AddedTTFTus.P50), fmtSignedUS(q.AddedTTFTus.P99))
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
	p("\nRaw numbers: [%s](%s). Run took %.0f s.\n", filepath.Base(jsonPath), jsonPath, rep.Seconds)
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
