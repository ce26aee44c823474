package server

import (
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestSlotActionErrors: the slot actions' answers before any KV moves
// (the moves themselves: cmd/tandem's TestSlotSaveRestore), and id_slot
// pinning a native completion to its slot's engine.
func TestSlotActionErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) },
		states: []engineclient.EngineState{
			{Index: 0, Ready: true, Info: wire.Ready{MaxNumSeqs: 2, EngineIndex: 0}},
			{Index: 1, Ready: true, Info: wire.Ready{MaxNumSeqs: 2, EngineIndex: 1}},
		}}
	off := newTestServer(t, f, "")
	if code, body := do(t, off, "POST", "/slots/0?action=save", `{"filename": "a.bin"}`, nil); code != 501 || !strings.Contains(body, "--slot-save-path") {
		t.Errorf("without --slot-save-path: %d %s", code, body)
	}
	ts := newTestServerWith(t, f, func(c *Config) { c.SlotSavePath = t.TempDir() }, tokenizer.NewByte())
	for _, tc := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/slots/x?action=save", `{"filename": "a.bin"}`, 400, "Invalid slot ID"},
		{"/slots/4?action=save", `{"filename": "a.bin"}`, 400, "Invalid slot ID"},
		{"/slots/-1?action=save", `{"filename": "a.bin"}`, 400, "Invalid slot ID"},
		{"/slots/0?action=load", `{"filename": "a.bin"}`, 400, "Invalid action"},
		{"/slots/0", `{"filename": "a.bin"}`, 400, "Invalid action"},
		{"/slots/0?action=save", `{"filename": "../a.bin"}`, 400, "Invalid filename"},
		{"/slots/0?action=restore", `{"filename": "a/b"}`, 400, "Invalid filename"},
		{"/slots/0?action=restore", `{}`, 400, "Invalid filename"},
		{"/slots/0?action=restore", `{"filename": 3}`, 400, "filename"},
		{"/slots/0?action=save", `{"filename": "a.bin"}`, 501, "cannot move KV blocks"}, // the fake engine has no KV transfer
		{"/completion", `{"prompt": "x", "id_slot": 4}`, 400, "Invalid slot ID"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "id_slot": 7}`, 400, "Invalid slot ID"},
		{"/v1/completions", `{"prompt": "x", "id_slot": 4}`, 400, "Invalid slot ID"},
	} {
		if code, body := do(t, ts, "POST", tc.path, tc.body, nil); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("POST %s %s: %d %s, want %d %q", tc.path, tc.body, code, body, tc.code, tc.want)
		}
	}
	for slot, rank := range []int{0, 0, 1, 1} {
		n := string(rune('0' + slot))
		for path, body := range map[string]string{
			"/completion":          `{"prompt": "x", "n_predict": 1, "id_slot": ` + n + `}`,
			"/v1/completions":      `{"prompt": "x", "max_tokens": 1, "id_slot": ` + n + `}`,
			"/v1/chat/completions": `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "id_slot": ` + n + `}`,
		} {
			before := len(f.requests())
			if code, resp := do(t, ts, "POST", path, body, nil); code != 200 {
				t.Fatalf("%s on slot %d: %d %s", path, slot, code, resp)
			}
			req := f.requests()[before]
			if req.DataParallelRank == nil || *req.DataParallelRank != rank {
				t.Errorf("%s, id_slot %d: data_parallel_rank %v, want engine %d", path, slot, req.DataParallelRank, rank)
			}
		}
	}
}
