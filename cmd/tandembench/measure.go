package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// measureThreads loads Tandem once for cfgs (all of one thread count) and
// measures every config on every engine, Tandem first, then llamas in
// order (the prebuilt libraries, then the native build).
func measureThreads(ctx context.Context, o options, cfgs []Config, llamas []*llamaBench, stderr io.Writer) ([]Row, error) {
	threads := cfgs[0].Threads
	kv := 0
	for _, c := range cfgs {
		kv = max(kv, kvTokens(c, o.blockSize))
	}
	t0 := time.Now()
	eng, err := loadTandem(o.model, threads, o.blockSize, kv, o.precision)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	fmt.Fprintf(stderr, "tandem: loaded %s with %d thread(s) in %v\n", o.model, threads, time.Since(t0).Round(time.Millisecond))
	var rows []Row
	for _, c := range cfgs {
		prompts := promptIDs(o.seed, c.Streams, c.PromptTokens, eng.info.VocabSize)
		r := Row{Config: c}
		r.Tandem, err = attempts(ctx, o, stderr, "tandem "+c.String(), func() (Measure, error) { return eng.measure(ctx, c, prompts) })
		if err != nil {
			return nil, err
		}
		for i, l := range llamas {
			m, err := attempts(ctx, o, stderr, l.name+" "+c.String(), func() (Measure, error) {
				m, _, err := l.measure(ctx, c, prompts)
				return m, err
			})
			if err != nil {
				return nil, err
			}
			if i == 0 {
				r.Llama = &m
			} else {
				r.Native = &m
			}
		}
		r.compare()
		fmt.Fprintln(stderr, progressLine(r))
		rows = append(rows, r)
	}
	return rows, nil
}

// nativeMissing says why the native llama.cpp column cannot run: "" when
// bin exists, else the reason build.sh left in bin.unavailable.
func nativeMissing(bin string) string {
	if bin == "" {
		return "--llamabench-native is empty"
	}
	if _, err := os.Stat(bin); err == nil {
		return ""
	}
	if why, err := os.ReadFile(bin + ".unavailable"); err == nil && len(strings.TrimSpace(string(why))) > 0 {
		return strings.TrimSpace(string(why))
	}
	return bin + " not found (run scripts/llamabench/native.sh && scripts/llamabench/build.sh)"
}

// attempts runs measure until other processes used at most o.maxOther of
// the CPU meanwhile, at most 1+o.retries times, and keeps the attempt
// with the least interference.
func attempts(ctx context.Context, o options, stderr io.Writer, what string, measure func() (Measure, error)) (Measure, error) {
	m, other, n, err := retry(ctx, o, stderr, what, measure)
	m.OtherCPU, m.Attempts = other, n
	return m, err
}

// retry is attempts for any result: it returns the kept attempt's
// result, the share of the CPU others used during it, and the number of
// attempts.
func retry[T any](ctx context.Context, o options, stderr io.Writer, what string, measure func() (T, error)) (best T, other float64, n int, err error) {
	sample := o.sample
	if sample == nil {
		sample = sampleCPU
	}
	var zero T
	for i := range 1 + o.retries {
		if i > 0 {
			fmt.Fprintf(stderr, "%s: other processes used %.0f%% of the CPU; retrying in %v\n", what, 100*other, o.retryWait)
			select {
			case <-ctx.Done():
				return zero, 0, 0, ctx.Err()
			case <-time.After(o.retryWait):
			}
		}
		before := sample()
		m, err := measure()
		if err != nil {
			return zero, 0, 0, err
		}
		if x := otherCPU(before, sample(), runtime.NumCPU()); i == 0 || x < other {
			best, other = m, x
		}
		n = i + 1
		if other <= o.maxOther {
			break
		}
	}
	return best, other, n, nil
}

// progressLine is one row as a log line.
func progressLine(r Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s t=%d S=%-2d P=%d D=%d  tandem prefill %7.1f decode %7.1f tok/s", r.Kind, r.Threads, r.Streams, r.PromptTokens, r.GenTokens, r.Tandem.Prefill, r.Tandem.Decode)
	if r.Llama != nil {
		fmt.Fprintf(&b, " | llama.cpp prebuilt prefill %7.1f decode %7.1f tok/s | ratio prefill %s decode %s", r.Llama.Prefill, r.Llama.Decode, fmtRatio(r.PrefillRatio), fmtRatio(r.DecodeRatio))
	}
	if r.Native != nil {
		fmt.Fprintf(&b, " | native prefill %7.1f decode %7.1f tok/s | ratio prefill %s decode %s", r.Native.Prefill, r.Native.Decode, fmtRatio(r.NativePrefillRatio), fmtRatio(r.NativeDecodeRatio))
	}
	fmt.Fprintf(&b, " | others' CPU %.0f%%", 100*r.otherCPU())
	return b.String()
}

// measureVariants measures eng on prompts once per variant, all in each
// attempt, under retry: each Measure carries the kept attempt's share of
// others' CPU and the attempt count; last is each variant's last
// repetition.
func measureVariants(ctx context.Context, o options, stderr io.Writer, what string, eng *tandem, cfg Config, prompts [][]int32, vs []variant) (ms []Measure, last []onceResult, err error) {
	type result struct {
		ms   []Measure
		last []onceResult
	}
	r, other, n, err := retry(ctx, o, stderr, what, func() (result, error) {
		ms, last, err := eng.measureEach(ctx, cfg, prompts, vs)
		return result{ms, last}, err
	})
	if err != nil {
		return nil, nil, err
	}
	for i := range r.ms {
		r.ms[i].OtherCPU, r.ms[i].Attempts = other, n
	}
	return r.ms, r.last, nil
}
