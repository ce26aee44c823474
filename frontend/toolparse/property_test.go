package toolparse

import (
	"math/rand"
	"testing"
)

// TestSplitProperty runs FuzzSplit's check on random texts built from the
// formats' markers and JSON/Python punctuation, and on random edits of
// its seeds (go test runs fuzz targets on their seeds only).
func TestSplitProperty(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	words := []string{"<tool_call>", "</tool_call>", "{", "}", "[", "]", `"`, "name", "arguments", "parameters", ":", ",", " ", "\n",
		`"name": "get_time"`, `"arguments": {`, "get_time", "1", "x", `\`, "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|python_tag|>", ";",
		"(", ")", "=", "'", "True", "é"}
	for range 500 {
		var b []byte
		if r.Intn(2) == 0 {
			for k := r.Intn(24); k > 0; k-- {
				b = append(b, words[r.Intn(len(words))]...)
			}
		} else {
			b = []byte(splitSeeds[r.Intn(len(splitSeeds))])
			for k := r.Intn(4); k >= 0 && len(b) > 0; k-- {
				i := r.Intn(len(b))
				switch r.Intn(3) {
				case 0:
					b[i] = byte(r.Intn(128))
				case 1:
					b = append(b[:i], b[i+1:]...)
				default:
					b = append(b[:i], append([]byte(words[r.Intn(len(words))]), b[i:]...)...)
				}
			}
		}
		checkSplits(t, string(b))
		if t.Failed() {
			return
		}
	}
}
