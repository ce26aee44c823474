package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Markers of the scale section in the doc (one, the latest run).
const (
	scaleBegin = "<!-- tandembench:scale:begin -->"
	scaleEnd   = "<!-- tandembench:scale:end -->"
)

// spliceScale puts section in place of the doc's scale section, else
// before the dated CPU sections, else at the end.
func spliceScale(doc, section string) string {
	if i := strings.Index(doc, scaleBegin); i >= 0 {
		if j := strings.Index(doc[i:], scaleEnd); j >= 0 {
			return doc[:i] + strings.TrimSuffix(section, "\n") + doc[i+j+len(scaleEnd):]
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

// renderScale is rep as markdown, markers included.
func renderScale(rep *ScaleReport, jsonPath string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s\n", scaleBegin)
	p("### 1B/3B models, long context and memory vs llama.cpp (%s)\n\n", rep.Date)
	if rep.Quick {
		p("**Quick smoke run (`--quick`): not a measurement.**\n\n")
	}
	if rep.Machine.busy() {
		p("**The machine was busy when this run started (%s): these numbers are unreliable.**\n\n", rep.Machine.busyWhy())
	}
	p("`make bench`'s scale phase on %s, %d logical cores; Tandem %s kernels, KV f32, --cpu-precision %s; llama.cpp as in the CPU sections (%s, KV %s). "+
		"Single stream, greedy, the same random prompt ids for every engine; each number is the median of %d repetition(s) after one warm-up (few, because these rows take minutes). ",
		orUnknown(rep.Machine.CPU), rep.Machine.Cores, orUnknown(rep.Tandem.Kernels), orUnknown(rep.Tandem.Precision), scaleColumns(rep), kvOf(rep), repsOf(rep))
	if slices.ContainsFunc(rep.Rows, func(r ScaleRow) bool { return r.Fast != nil }) {
		p("Tandem's default precision computes prompt tokens at about 15 bits (an int8 row and an int8 row of its residual, per 32 elements; for Q4_K on CPUs with AMX, per 256-element super-block, the super form of docs/architecture.md), for logits within about 1e-3 of float64; " +
			"llama.cpp's activations are int8. \"prefill Tandem fast\" is the same model again at --cpu-precision fast, llama.cpp's arithmetic. ")
	}
	if rep.NativeMissing != "" {
		p("**No native llama.cpp column (%s): the targets use the prebuilt libraries.** ", rep.NativeMissing)
	}
	p("\n\n")
	if bw := rep.Bandwidth; bw != nil {
		p("DRAM read bandwidth, measured in this run (a streaming read of %d MiB by %s, best of %d passes at the start and the end of the phase): %s. "+
			"A decode step at batch 1 reads every matrix once, one embedding row, and the K and V of every layer at its depth; "+
			"\"bytes/token\" is that at the mean decode depth P + D/2, from the GGUF's tensor sizes (Tandem's KV in f32, llama.cpp's in %s), "+
			"and \"%% of DRAM bound\" is decode tok/s × bytes/token ÷ the bandwidth at the row's thread count.\n\n",
			bw.BufferBytes>>20, bw.Kernel, bw.Passes, fmtBandwidth(bw), kvOf(rep))
	}
	if len(rep.Models) > 0 {
		p("Random-weight GGUFs written by tandembench (enginecore/loader/testmodel, quantized by enginecore/model; cached under .cache/benchmodels): "+
			"shape 1b = dim 2048, 16 layers, 32/8 heads, FFN 8192; 3b = dim 3072, 28 layers, 24/8 heads, FFN 8192; both a 32k vocabulary and an untied output. "+
			"q4_0: Q4_0 matrices, output Q6_K; q4_k_m: Q4_K, output Q6_K, attn_v and ffn_down Q6_K in llama.cpp's use_more_bits layers; q8_0: Q8_0. Files: %s.\n\n", modelList(rep.Models))
	}
	cols := scaleLlamaColumns(rep)
	table := func(kind, title string) {
		var rows []ScaleRow
		for _, r := range rep.Rows {
			if r.Kind == kind {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			return
		}
		p("#### %s\n\n", title)
		hasFast := slices.ContainsFunc(rows, func(r ScaleRow) bool { return r.Fast != nil })
		head := []string{"model", "threads", "P", "D", "prefill Tandem"}
		for _, c := range cols {
			head = append(head, "prefill "+c.name, "ratio")
		}
		if hasFast {
			head = append(head, "prefill Tandem fast", "ratio")
		}
		head = append(head, "decode Tandem")
		for _, c := range cols {
			head = append(head, "decode "+c.name, "ratio")
		}
		head = append(head, "bytes/token Tandem", "% of DRAM bound Tandem")
		for _, c := range cols {
			head = append(head, "% of DRAM bound "+c.name)
		}
		head = append(head, "greedy agree", "others' CPU")
		rule := make([]string, len(head))
		for i := range rule {
			rule[i] = "---:"
		}
		rule[0] = "---"
		p("| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(rule, "|"))
		for _, r := range rows {
			cells := []string{r.Model, fmt.Sprint(r.Threads), fmt.Sprint(r.PromptTokens), fmt.Sprint(r.GenTokens), fmt.Sprintf("%.1f", r.Tandem.Prefill)}
			for _, c := range cols {
				m, pre, _, _ := c.of(r.Row)
				cells = append(cells, llamaNum(m, true), fmtRatio(pre))
			}
			if hasFast {
				cells = append(cells, llamaNum(r.Fast, true), fmtRatio(r.FastPrefillRatio))
			}
			cells = append(cells, fmt.Sprintf("%.2f", r.Tandem.Decode))
			for _, c := range cols {
				m, _, dec, _ := c.of(r.Row)
				cells = append(cells, llamaNum(m, false), fmtRatio(dec))
			}
			cells = append(cells, fmtBytes(r.BytesTandem), fmtShare(r.DRAMTandem))
			for _, c := range cols {
				if c.name == "llama.cpp native" {
					cells = append(cells, fmtShare(r.DRAMNative))
				} else {
					cells = append(cells, fmtShare(r.DRAMLlama))
				}
			}
			cells = append(cells, agreeAll(r.Row, cols), others(r.Row, rep.MaxOtherCPU))
			p("| %s |\n", strings.Join(cells, " | "))
		}
		p("\n")
	}
	table(kindModel, "1B- and 3B-shape models at the DRAM bound")
	table(kindLong, fmt.Sprintf("Long context on %s (decode at depth P)", filepath.Base(rep.DefaultModel)))
	if rep.MemoryError != "" {
		p("**The memory part failed: %s.**\n\n", firstLine(rep.MemoryError))
	}
	if m := rep.Memory; m != nil {
		p("#### Peak memory, %s, context %d tokens\n\n", filepath.Base(m.Model), m.Ctx)
		p("One completion (%d prompt ids, %d output tokens, %d thread(s)) through `tandem serve --max-model-len %d --max-num-seqs 1 --kv-cache-memory %d --weights-cache-dir DIR` "+
			"(real processes: the supervisor, its engine and its frontend), twice on a new DIR: the first start packs the matrices into the pack cache file, the second maps the file the first wrote; "+
			"next to llama.cpp's bench process with n_ctx %d on the same prompt. "+
			"Peak is VmHWM from /proc/PID/status (summed over Tandem's processes); anonymous and file-backed (mapped weights, binary) RSS are read at the end. "+
			"Weights file %s; KV pool for the context: Tandem %s (f32), llama.cpp %s (%s); pages of it never written are not resident. "+
			"Loading the model into Tandem's CPU backend adds %s of Go heap (measured in-process): its repacked matrices (kernels.Pack, as llama.cpp's CPU_REPACK buffers) live in the pack cache file, mapped read-only (cpu.WithPackCache); "+
			"the engine releases the mapped pages of the model file it packed or hashed, and \"model file resident\" is what stays of its mappings of the file, \"pack file resident\" of the pack cache file (Pss in /proc/PID/smaps: a page another process maps too counts by its share). "+
			"llama.cpp's weights sit in %s.\n\n",
			m.PromptTokens, m.GenTokens, m.Threads, m.Ctx, m.KVBytesTandem, m.Ctx, fmtBytes(float64(m.WeightsBytes)), fmtBytes(float64(m.KVBytesTandem)), fmtBytes(float64(m.KVBytesLlama)), kvOf(rep),
			fmtBytes(float64(m.LoadHeapBytes)), llamaBuffers(rep))
		p("| engine | process | peak RSS | anonymous at end | file-backed at end | model file resident | pack file resident |\n|---|---|---:|---:|---:|---:|---:|\n")
		for _, e := range []struct {
			name string
			m    *MemoryEngine
		}{{"Tandem, first start", m.TandemCold}, {"Tandem, second start", m.Tandem}, {"llama.cpp prebuilt", m.Llama}, {"llama.cpp native", m.Native}} {
			if e.m == nil {
				continue
			}
			kib := func(k int64) string {
				if k > 0 {
					return fmtKiB(k)
				}
				return "—"
			}
			for _, pr := range e.m.Processes {
				p("| %s | %s | %s | %s | %s | %s | %s |\n", e.name, pr.Role, fmtKiB(pr.VmHWMKiB), fmtKiB(pr.RssAnonKiB), fmtKiB(pr.RssFileKiB), kib(pr.ModelPssKiB), kib(pr.PackPssKiB))
			}
			if len(e.m.Processes) > 1 {
				p("| %s | **all** | **%s** | | | | |\n", e.name, fmtKiB(e.m.PeakKiB))
			}
		}
		p("\n")
	}
	if len(rep.Targets) > 0 {
		p("| target | want | measured | met |\n|---|---|---:|---|\n")
		for _, t := range rep.Targets {
			p("| %s | %s | %s | %s |\n", t.Name, t.Want, fmtTarget(t), metWord(t.Met))
		}
		p("\n")
	}
	p("Raw numbers: [%s](%s). Run took %.0f s. Rerun: `%s`.\n", filepath.Base(jsonPath), jsonPath, rep.Seconds, rep.Command)
	p("%s\n", scaleEnd)
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// llamaBuffers names the buffer types that held llama.cpp's weights in
// the probe on the default model (CPU_REPACK: a repacked copy too).
func llamaBuffers(rep *ScaleReport) string {
	if rep.Llama == nil || len(rep.Llama.WeightBuffers) == 0 {
		return "buffers not reported"
	}
	return strings.Join(rep.Llama.WeightBuffers, " + ") + " buffers"
}

// scaleLlamaColumns are the llama.cpp columns the scale report has.
func scaleLlamaColumns(rep *ScaleReport) []llamaColumn {
	rows := make([]Row, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = r.Row
	}
	return llamaColumns(&Report{Llama: rep.Llama, Native: rep.Native, Rows: rows})
}

func scaleColumns(rep *ScaleReport) string {
	switch {
	case rep.Native != nil:
		return "prebuilt and native builds"
	case rep.Llama != nil:
		return "prebuilt libraries only"
	default:
		return "not run"
	}
}

func kvOf(rep *ScaleReport) string {
	if rep.Llama != nil && rep.Llama.KVType != "" {
		return rep.Llama.KVType
	}
	return "f16"
}

func repsOf(rep *ScaleReport) int {
	if len(rep.Rows) > 0 {
		return rep.Rows[0].Reps
	}
	return 0
}

func modelList(ms []benchModel) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s %s", m.Name, fmtBytes(float64(m.Bytes))))
	}
	return strings.Join(parts, ", ")
}
