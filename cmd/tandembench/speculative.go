package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/spec"
)

// The speculative phase: what n-gram speculative decoding buys. The same
// streams decode without drafts and with vLLM's ngram proposer at a few
// draft sizes k, on two kinds of run: "repeat", greedy on a random token
// run said three times (the model goes on repeating it: induction, as
// when it copies code, quotes or a document it was given), and "sampled",
// random ids sampled at temperature 1, seeded per stream (text that
// rarely repeats: little for a draft to find). Outputs are the same with
// and without drafts (exact verification, seeds included); the ratio of
// decode tok/s is the gain, the share of draft tokens kept its reason.

const kindSpeculative = "speculative"

// specPromptKinds are the prompt kinds, in report order.
var specPromptKinds = []string{"repeat", "sampled"}

// SpecReport is everything the speculative phase writes to
// speculative-DATE.json.
type SpecReport struct {
	Date        string    `json:"date"`
	Started     string    `json:"started"`
	Seconds     float64   `json:"seconds"`
	Machine     Machine   `json:"machine"`
	Model       string    `json:"model"`
	Prompts     string    `json:"prompts"`
	Tandem      Setup     `json:"tandem"`
	Rows        []SpecRow `json:"rows"`
	Quick       bool      `json:"quick,omitempty"`
	Command     string    `json:"command"`
	MaxOtherCPU float64   `json:"max_other_cpu"`
}

// SpecRow is one prompt kind and stream count at one draft size.
type SpecRow struct {
	Config
	Prompt string   `json:"prompt"` // repeat or random
	K      int      `json:"k"`      // num_speculative_tokens, 0 = no drafts
	Plain  Measure  `json:"plain"`  // without drafts, run alternately with Spec
	Spec   Measure  `json:"spec"`
	Ratio  *float64 `json:"decode_ratio"` // median of the repetitions' spec / plain decode tok/s
	Same   bool     `json:"same_tokens"`  // stream 0's tokens equal without and with drafts
	// Drafted and Accepted are the last repetition's draft tokens and
	// those kept; Steps its verified drafts.
	Drafted, Accepted, Steps int64
}

// specPrompts are S prompts of P tokens of kind.
func specPrompts(kind string, seed uint64, streams, n, vocab int) [][]int32 {
	if kind != "repeat" {
		return promptIDs(seed, streams, n, vocab)
	}
	run := promptIDs(seed, streams, (n+2)/3, vocab)
	out := make([][]int32, streams)
	for s := range out {
		for len(out[s]) < n {
			out[s] = append(out[s], run[s]...)
		}
		out[s] = out[s][:n]
	}
	return out
}

// runSpeculative measures the speculative phase and writes its outputs.
func runSpeculative(ctx context.Context, o options, stderr io.Writer) error {
	m, err := quietMachine(ctx, o, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	rep := &SpecReport{
		Date: o.date, Started: start.Format(time.RFC3339), Machine: m, Model: o.model,
		Prompts: fmt.Sprintf("repeat (greedy): a run of %s, said three times; sampled (temperature 1, seed = stream index): %s", fmt.Sprintf(promptRule, o.seed), fmt.Sprintf(promptRule, o.seed)),
		Tandem:  Setup{KVType: "f32", BlockSize: o.blockSize, Kernels: kernelsInUse(), Precision: o.precision.String()},
		Quick:   o.quick, MaxOtherCPU: o.maxOther,
		Command: strings.TrimSpace(goExperimentEnv() + " go run ./cmd/tandembench --phase speculative " + o.specFlags()),
	}
	threads := o.structuredThreads
	kv := 0
	var cfgs []Config
	for _, s := range o.specStreams {
		c := Config{Kind: kindSpeculative, Threads: threads, Streams: s, PromptTokens: o.streamPrompt, GenTokens: o.specGen, Reps: o.reps}
		cfgs = append(cfgs, c)
		kv = max(kv, kvTokens(c, o.blockSize)+s*(o.blockSize+slices.Max(o.specK)))
	}
	eng, err := loadTandem(o.model, threads, o.blockSize, kv, o.precision)
	if err != nil {
		return err
	}
	defer eng.Close()
	for _, kind := range specPromptKinds {
		sampled := kind == "sampled"
		for _, cfg := range cfgs {
			prompts := specPrompts(kind, o.seed, cfg.Streams, cfg.PromptTokens, eng.info.VocabSize)
			for _, k := range o.specK {
				sc := &spec.Config{Method: spec.MethodNgram, NumSpeculativeTokens: k, PromptLookupMin: 2, PromptLookupMax: 4}
				row := SpecRow{Config: cfg, Prompt: kind, K: k}
				ms, last, err := measureVariants(ctx, o, stderr, fmt.Sprintf("%v %s k=%d", cfg, kind, k), eng, cfg, prompts,
					[]variant{{sampled: sampled}, {spec: sc, sampled: sampled}})
				if err != nil {
					return err
				}
				row.Plain, row.Spec = ms[0], ms[1]
				row.Ratio = pairedRatio(row.Spec.DecodeTokS, row.Plain.DecodeTokS)
				row.Same = slices.Equal(row.Plain.Tokens, row.Spec.Tokens)
				if st := last[1].spec; st != nil {
					row.Drafted, row.Accepted, row.Steps = st.NumDraftTokens, st.NumAcceptedTokens, st.NumDrafts
				}
				fmt.Fprintf(stderr, "speculative t=%d S=%-2d %-6s k=%d  decode %7.1f → %7.1f tok/s (%s), drafts kept %d/%d, same tokens %v | others' CPU %.0f%%\n",
					cfg.Threads, cfg.Streams, kind, k, row.Plain.Decode, row.Spec.Decode, fmtRatio(row.Ratio), row.Accepted, row.Drafted, row.Same, 100*row.Spec.OtherCPU)
				rep.Rows = append(rep.Rows, row)
			}
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Machine.LoadAvgEnd = loadAvg()
	return writePhase(o, stderr, "speculative", rep.Date, rep, func(doc, rel string) string {
		return spliceMarked(doc, specBegin, specEnd, renderSpec(rep, rel))
	})
}

// Markers of the speculative section in the doc (one, the latest run).
const (
	specBegin = "<!-- tandembench:speculative:begin -->"
	specEnd   = "<!-- tandembench:speculative:end -->"
)

// spliceMarked puts section in place of the doc's section between begin
// and end, else before the dated CPU sections, else at the end.
func spliceMarked(doc, begin, end, section string) string {
	if i := strings.Index(doc, begin); i >= 0 {
		if j := strings.Index(doc[i:], end); j >= 0 {
			return doc[:i] + strings.TrimSuffix(section, "\n") + doc[i+j+len(end):]
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

// renderSpec is rep as markdown, markers included.
func renderSpec(rep *SpecReport, jsonPath string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s\n", specBegin)
	p("### Speculative decoding on the engine (%s)\n\n", rep.Date)
	if rep.Quick {
		p("**Quick smoke run (`--quick`): not a measurement.**\n\n")
	}
	threads, prompt, gen := 0, 0, 0
	if len(rep.Rows) > 0 {
		threads, prompt, gen = rep.Rows[0].Threads, rep.Rows[0].PromptTokens, rep.Rows[0].GenTokens
	}
	p("`make bench`'s speculative phase: %s, %d thread(s), %s kernels; the engine stepped in-process (P = %d, D = %d per stream). "+
		"Each row decodes the same prompts without drafts and with vLLM's n-gram proposer (`--speculative-config` method `ngram`, "+
		"`prompt_lookup_min` 2, `prompt_lookup_max` 4, `num_speculative_tokens` k), alternately; decode tok/s are medians of the "+
		"repetitions, the ratio the median of their ratios. *repeat*: greedy on a random token run said three times (the model "+
		"goes on repeating it, as when it copies code or quotes a document); *sampled*: random ids sampled at temperature 1, seeded "+
		"per stream (text that rarely repeats). \"same\" says stream 0's tokens are equal without and with drafts.\n\n", filepath.Base(rep.Model), threads, rep.Tandem.Kernels, prompt, gen)
	p("| prompt | streams | k | decode without | decode with | ratio | draft tokens kept | same | others' CPU |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, r := range rep.Rows {
		other := max(r.Plain.OtherCPU, r.Spec.OtherCPU)
		warn := ""
		if other > rep.MaxOtherCPU {
			warn = " ⚠"
		}
		kept := "—"
		if r.Drafted > 0 {
			kept = fmt.Sprintf("%d / %d (%.0f%%)", r.Accepted, r.Drafted, 100*float64(r.Accepted)/float64(r.Drafted))
		}
		p("| %s | %d | %d | %.1f | %.1f | %s | %s | %v | %.0f%%%s |\n", r.Prompt, r.Streams, r.K, r.Plain.Decode, r.Spec.Decode,
			fmtRatio(r.Ratio), kept, r.Same, 100*other, warn)
	}
	p("\nRaw numbers: [%s](%s). Run took %.0f s.\n", filepath.Base(jsonPath), jsonPath, rep.Seconds)
	p("%s\n", specEnd)
	return b.String()
}
