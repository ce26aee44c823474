package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is the outcome of a soak run.
type Report struct {
	Config      Config        `json:"-"`
	Started     time.Time     `json:"started"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	NumRequests int           `json:"num_requests"`
	NumTokens   int           `json:"num_tokens"` // completion tokens the server reported
	// ByClass counts requests per class; ByKind per kind and class.
	ByClass map[Class]int          `json:"by_class"`
	ByKind  map[Kind]map[Class]int `json:"by_kind"`
	// Latency is per kind, over the requests that ended ClassOK.
	Latency map[Kind]Latency `json:"latency"`
	Memory  []Memory         `json:"memory"`
	Faults  []Fault          `json:"faults"`
	// Baseline is the server before the load; After is the last snapshot of the idle
	// check, and Idle whether the server got back to idle within Config.IdleWithin.
	Baseline Snapshot `json:"baseline"`
	After    Snapshot `json:"after"`
	Idle     bool     `json:"idle"`
	// Examples holds one detail line per class that is not ClassOK.
	Examples map[Class]string `json:"examples"`

	samples map[Kind][]result // ok requests, for Latency
}

// Latency holds percentiles of one kind's successful requests.
type Latency struct {
	N       int           `json:"n"`
	TTFTP50 time.Duration `json:"ttft_p50_ns"`
	TTFTP99 time.Duration `json:"ttft_p99_ns"`
	E2EP50  time.Duration `json:"e2e_p50_ns"`
	E2EP99  time.Duration `json:"e2e_p99_ns"`
}

// Memory is one server process's RSS over the run.
type Memory struct {
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	StartRSS   int64  `json:"start_rss"` // bytes, first sample
	PeakRSS    int64  `json:"peak_rss"`  // bytes
	EndRSS     int64  `json:"end_rss"`   // bytes, last sample
	NumSamples int    `json:"num_samples"`
}

// Fault is one injected fault.
type Fault struct {
	At   time.Duration `json:"at_ns"` // since the load started
	What string        `json:"what"`
}

func (r *Report) add(res result) {
	r.NumRequests++
	r.NumTokens += res.numTokens
	r.ByClass[res.class]++
	if r.ByKind[res.kind] == nil {
		r.ByKind[res.kind] = map[Class]int{}
	}
	r.ByKind[res.kind][res.class]++
	if res.class != ClassOK {
		if _, ok := r.Examples[res.class]; !ok {
			r.Examples[res.class] = fmt.Sprintf("%s: %s", res.kind, res.detail)
		}
		return
	}
	if r.samples == nil {
		r.samples = map[Kind][]result{}
	}
	r.samples[res.kind] = append(r.samples[res.kind], res)
}

func (r *Report) finish() {
	r.Latency = map[Kind]Latency{}
	for k, rs := range r.samples {
		ttft := make([]time.Duration, len(rs))
		e2e := make([]time.Duration, len(rs))
		for i, x := range rs {
			ttft[i], e2e[i] = x.ttft, x.e2e
		}
		r.Latency[k] = Latency{N: len(rs), TTFTP50: percentile(ttft, 50), TTFTP99: percentile(ttft, 99),
			E2EP50: percentile(e2e, 50), E2EP99: percentile(e2e, 99)}
	}
}

// percentile returns the p-th percentile (nearest rank) of xs, which it sorts.
func percentile(xs []time.Duration, p int) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := (len(xs)*p + 99) / 100 // nearest rank, 1-based
	return xs[max(0, min(len(xs), i)-1)]
}

// Limits are the bounds Failures checks besides the request classes.
type Limits struct {
	// MaxRSS bounds the peak RSS of processes by name prefix ("frontend", "engine").
	MaxRSS map[string]int64 // bytes
}

// Failures lists what went wrong: requests in failure classes, a server that did not
// return to idle (leaked requests, KV blocks or goroutines), RSS above the limits.
func (r *Report) Failures(l Limits) []string {
	var out []string
	for _, c := range sortedKeys(r.ByClass) {
		if c.Failure() && r.ByClass[c] > 0 {
			out = append(out, fmt.Sprintf("%d requests %s (e.g. %s)", r.ByClass[c], c, r.Examples[c]))
		}
	}
	if r.ByClass[ClassOK] == 0 {
		out = append(out, "no request succeeded")
	}
	if !r.Idle {
		out = append(out, fmt.Sprintf("server not back to idle within %s: %s (baseline goroutines %d + slack %d)",
			r.Config.IdleWithin, r.After, r.Baseline.Goroutines, r.Config.GoroutineSlack))
	}
	for _, m := range r.Memory {
		for prefix, limit := range l.MaxRSS {
			if strings.HasPrefix(m.Name, prefix) && m.PeakRSS > limit {
				out = append(out, fmt.Sprintf("%s (pid %d) peak RSS %d MiB > %d MiB", m.Name, m.PID, m.PeakRSS>>20, limit>>20))
			}
		}
	}
	return out
}

// Leaks counts what did not return to idle: requests still running or waiting, KV
// usage above zero, goroutines above the baseline plus slack.
func (r *Report) Leaks() int {
	n := 0
	for _, e := range r.After.Engines {
		n += e.NumRunning + e.NumWaiting + e.NumInFlight
		if e.KVCacheUsage != 0 {
			n++
		}
	}
	if extra := r.After.Goroutines - r.Baseline.Goroutines - r.Config.GoroutineSlack; extra > 0 {
		n += extra
	}
	return n
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	ks := slices.Collect(maps.Keys(m))
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes the report as Markdown tables.
func (r *Report) WriteMarkdown(w io.Writer) error {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "Load: %d concurrent clients for %s (mix stream %d / session %d / cancel %d / non-stream %d / bad %d, max_tokens ≤ %d), %s in all.\n\n",
		c.NumClients, c.Duration, c.Mix.Stream, c.Mix.Session, c.Mix.Cancel, c.Mix.NonStream, c.Mix.Bad, c.MaxTokens, r.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "| requests | completion tokens | requests/s | faults injected | failures | leaks found |\n|---:|---:|---:|---:|---:|---:|\n")
	numFailed := 0
	for cl, n := range r.ByClass {
		if cl.Failure() {
			numFailed += n
		}
	}
	fmt.Fprintf(&b, "| %d | %d | %.0f | %d | %d | %d |\n\n", r.NumRequests, r.NumTokens,
		float64(r.NumRequests)/r.Elapsed.Seconds(), len(r.Faults), numFailed, r.Leaks())

	kinds := sortedKeys(r.ByKind)
	classes := sortedKeys(r.ByClass)
	b.WriteString("Requests by kind and class:\n\n| kind |")
	for _, cl := range classes {
		fmt.Fprintf(&b, " %s |", cl)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(classes)) + "\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "| %s |", k)
		for _, cl := range classes {
			fmt.Fprintf(&b, " %d |", r.ByKind[k][cl])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| **all** |")
	for _, cl := range classes {
		fmt.Fprintf(&b, " **%d** |", r.ByClass[cl])
	}
	b.WriteString("\n\nLatency of successful requests (TTFT: first SSE event with text; non-streaming: the whole answer):\n\n")
	b.WriteString("| kind | n | TTFT p50 | TTFT p99 | e2e p50 | e2e p99 |\n|---|---:|---:|---:|---:|---:|\n")
	for _, k := range sortedKeys(r.Latency) {
		l := r.Latency[k]
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", k, l.N, ms(l.TTFTP50), ms(l.TTFTP99), ms(l.E2EP50), ms(l.E2EP99))
	}
	if len(r.Memory) > 0 {
		b.WriteString("\nMemory (RSS from /proc, sampled every second):\n\n| process | pid | start | peak | end |\n|---|---:|---:|---:|---:|\n")
		for _, m := range r.Memory {
			fmt.Fprintf(&b, "| %s | %d | %d MiB | %d MiB | %d MiB |\n", m.Name, m.PID, m.StartRSS>>20, m.PeakRSS>>20, m.EndRSS>>20)
		}
	}
	if len(r.Faults) > 0 {
		b.WriteString("\nFaults injected:\n\n")
		for _, f := range r.Faults {
			fmt.Fprintf(&b, "- at %s: %s\n", f.At.Round(100*time.Millisecond), f.What)
		}
	}
	fmt.Fprintf(&b, "\nServer before: %s\n\nServer after (idle: %v): %s\n", r.Baseline, r.Idle, r.After)
	if len(r.Examples) > 0 {
		b.WriteString("\nOne example per class:\n\n")
		for _, cl := range sortedKeys(r.Examples) {
			fmt.Fprintf(&b, "- %s: `%s`\n", cl, strings.ReplaceAll(r.Examples[cl], "`", "'"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
