package structured_test

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestMaskBenchExport writes the cases TestMaskBench picks (the same
// TANDEM_MASKBENCH_EVERY and TANDEM_MASKBENCH_HELD_OUT) to the JSONL file
// TANDEM_MASKBENCH_EXPORT names: one line per schema with each instance's
// token ids, tokenized as TestMaskBench tokenizes them, and the EOS id it
// checks. scripts/maskbench_llama/run.py forces the same ids through
// llama.cpp's grammar engine, so both matchers see the same tokens.
func TestMaskBenchExport(t *testing.T) {
	path := os.Getenv("TANDEM_MASKBENCH_EXPORT")
	model := os.Getenv("TANDEM_MODEL")
	if path == "" || model == "" {
		t.Skip("TANDEM_MASKBENCH_EXPORT or TANDEM_MODEL is not set (scripts/maskbench_llama/run.sh sets them)")
	}
	selected, _ := maskbenchSelection(t)
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	type instance struct {
		Valid bool  `json:"valid"`
		IDs   []int `json:"ids"`
	}
	type line struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		EOS    int             `json:"eos"`
		Tests  []instance      `json:"tests"`
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	numSchemas := 0
	for _, sc := range selected {
		name, c := sc.name, sc.c
		l := line{Name: name, Schema: c.Schema, EOS: int(tok.EOS()[0]), Tests: []instance{}}
		for _, tc := range c.Tests {
			text, good := instanceText(tc.Data)
			if !good {
				continue
			}
			ids := []int{}
			for _, id := range tok.Encode(text, false) {
				ids = append(ids, int(id))
			}
			l.Tests = append(l.Tests, instance{Valid: tc.Valid, IDs: ids})
		}
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
		numSchemas++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d schemas to %s", numSchemas, path)
}
