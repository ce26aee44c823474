package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestReturnProgressChunkedPrefill: llama.cpp's return_progress through
// real processes. With --max-num-batched-tokens 32 the engine prefills a
// ~100-token prompt in chunks, reports each chunk that samples nothing,
// and the stream shows prompt_progress rising to the whole prompt before
// the first token.
func TestReturnProgressChunkedPrefill(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "1024",
		"--max-num-batched-tokens", "32", "--kv-cache-memory", "64Mi", "--threads", "1")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	body, _ := json.Marshal(map[string]any{"prompt": strings.Repeat("progress ", 11), "n_predict": 3, "stream": true, "return_progress": true})
	resp, err := http.Post(base+"/completion", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := sseEvents(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	var processed []int
	total, tokensBefore := 0, 0
	for _, data := range events {
		var ev struct {
			Content  string
			Progress *struct{ Total, Cache, Processed int } `json:"prompt_progress"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if ev.Progress != nil {
			processed = append(processed, ev.Progress.Processed)
			total = ev.Progress.Total
			if tokensBefore > 0 {
				t.Errorf("progress after a token: %s", data)
			}
		} else if ev.Content != "" {
			tokensBefore++
		}
	}
	// What the cache served (nothing), ~100 prompt tokens in steps of at
	// most 32 (at least 3 reports that sampled nothing), the whole prompt.
	if total < 64 || len(processed) < 4 || processed[0] != 0 || processed[len(processed)-1] != total { // first: nothing cached
		t.Fatalf("prompt_progress processed %v of %d", processed, total)
	}
	for i := 1; i < len(processed); i++ {
		if processed[i] <= processed[i-1] || processed[i]-processed[i-1] > 32 {
			t.Errorf("processed %v: not rising in steps of at most 32", processed)
		}
	}
}
