package structured_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/structured"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// MaskBench (JSONSchemaBench's maskbench cases, ../shared/data): for each
// schema, every valid instance, tokenized by the default model's
// tokenizer, is forced through the matcher token by token (each token must
// be allowed: else a validation error) and must end complete; every
// invalid instance must be refused at some token or left incomplete (else
// an invalidation error: a clear bug). TANDEM_MASKBENCH_EVERY picks every
// Nth case (default 16 in make test; 1 for all of them);
// TANDEM_MASKBENCH_HELD_OUT=1 takes the other cases instead, the ones
// the tests never see (make bench measures those), and
// TANDEM_MASKBENCH_JSON names a file to write the figures to.

type mbCase struct {
	Schema json.RawMessage `json:"schema"`
	Tests  []struct {
		Data  json.RawMessage `json:"data"`
		Valid bool            `json:"valid"`
	} `json:"tests"`
}

func maskbenchCases(t *testing.T) map[string][]byte {
	t.Helper()
	path := os.Getenv("TANDEM_MASKBENCH")
	if path == "" {
		path = filepath.Join("..", "..", "..", "shared", "data", "maskbench-dev.tar.gz")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("MaskBench data not found (%v): set TANDEM_MASKBENCH to maskbench-dev.tar.gz", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && strings.HasSuffix(h.Name, ".json") {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			cases[filepath.Base(h.Name)] = b
		}
	}
	return cases
}

// mbSelected is one MaskBench case a run uses, decoded.
type mbSelected struct {
	name string
	c    mbCase
}

// maskbenchSelection is the cases a run uses, in name order: every
// TANDEM_MASKBENCH_EVERY-th (default 16, what make test runs), or with
// TANDEM_MASKBENCH_HELD_OUT=1 all the others; split says which.
func maskbenchSelection(t *testing.T) (selected []mbSelected, split string) {
	t.Helper()
	cases := maskbenchCases(t)
	every := 16
	if v := os.Getenv("TANDEM_MASKBENCH_EVERY"); v != "" {
		every, _ = strconv.Atoi(v)
		every = max(every, 1)
	}
	heldOut := os.Getenv("TANDEM_MASKBENCH_HELD_OUT") == "1"
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, name := range names {
		if (i%every == 0) == heldOut {
			continue
		}
		var c mbCase
		if err := json.Unmarshal(cases[name], &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		selected = append(selected, mbSelected{name, c})
	}
	split = fmt.Sprintf("every %d of %d cases", every, len(cases))
	if heldOut {
		split = fmt.Sprintf("held out: all but every %d of %d cases", every, len(cases))
	}
	return selected, split
}

// instanceText is an instance as JSON text: numbers as written, no HTML
// escaping.
func instanceText(raw json.RawMessage) (string, bool) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", false
	}
	return b.String(), true
}

func TestMaskBench(t *testing.T) {
	model := os.Getenv("TANDEM_MODEL")
	if model == "" {
		t.Skip("TANDEM_MODEL is not set (make test sets it after make model fetches SmolLM2-135M-Instruct)")
	}
	selected, split := maskbenchSelection(t)
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	gv, err := f.Metadata.Vocab()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	v, err := structured.NewVocab(gv.Pieces, gv.Special, tok.EOS())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	eos := tok.EOS()[0]

	var (
		schemas, passed, compileErrs, validationErrs, invalidationErrs int
		compileTimes, maskTimes                                        []time.Duration
	)
	mask := make([]uint32, v.MaskWords())
	for _, sc := range selected {
		name, c := sc.name, sc.c
		schemas++
		start := time.Now()
		m, err := v.Compile(structured.Constraint{Kind: structured.JSONSchema, Data: string(c.Schema)})
		compileTimes = append(compileTimes, time.Since(start))
		if err != nil {
			compileErrs++
			continue
		}
		m.Close()
		ok := true
		for _, tc := range c.Tests {
			text, good := instanceText(tc.Data)
			if !good {
				continue
			}
			m, err := v.Compile(structured.Constraint{Kind: structured.JSONSchema, Data: string(c.Schema)})
			if err != nil {
				t.Fatalf("%s: recompiling: %v", name, err)
			}
			accepted := true
			for _, id := range tok.Encode(text, false) {
				s := time.Now()
				err := m.FillMask(mask)
				maskTimes = append(maskTimes, time.Since(s))
				if err != nil || mask[id/32]>>(id%32)&1 == 0 || m.Accept(id) != nil {
					accepted = false
					break
				}
			}
			if accepted {
				if err := m.FillMask(mask); err != nil || mask[eos/32]>>(eos%32)&1 == 0 {
					accepted = false // not complete
				}
			}
			m.Close()
			switch {
			case tc.Valid && !accepted:
				validationErrs++
				ok = false
			case !tc.Valid && accepted:
				invalidationErrs++
				ok = false
				t.Errorf("%s: invalid instance accepted: %.200s", name, text)
			}
		}
		if ok {
			passed++
		}
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	share := float64(passed) / float64(max(schemas, 1))
	t.Logf("MaskBench (%s): %d schemas, %d passed (%.1f%%), %d compile errors, %d validation errors, %d invalidation errors; "+
		"compile p50 %v p99 %v; mask p50 %v p99 %v p99.9 %v over %d masks",
		split, schemas, passed, 100*share, compileErrs, validationErrs, invalidationErrs,
		pct(compileTimes, 0.5), pct(compileTimes, 0.99), pct(maskTimes, 0.5), pct(maskTimes, 0.99), pct(maskTimes, 0.999), len(maskTimes))
	if path := os.Getenv("TANDEM_MASKBENCH_JSON"); path != "" {
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
		fig := map[string]any{
			"date": time.Now().Format(time.DateOnly), "cases": split, "schemas": schemas, "passed": passed,
			"compile_errors": compileErrs, "validation_errors": validationErrs, "invalidation_errors": invalidationErrs,
			"compile_us": map[string]float64{"p50": us(pct(compileTimes, 0.5)), "p99": us(pct(compileTimes, 0.99)), "p99.9": us(pct(compileTimes, 0.999))},
			"mask_us":    map[string]float64{"p50": us(pct(maskTimes, 0.5)), "p99": us(pct(maskTimes, 0.99)), "p99.9": us(pct(maskTimes, 0.999))},
			"masks":      len(maskTimes), "model": filepath.Base(model),
		}
		b, _ := json.MarshalIndent(fig, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
	if schemas > 100 && share < 0.788 {
		t.Errorf("%.1f%% of the schemas pass, under LLGuidance's published 78.8%%", 100*share)
	}
}
