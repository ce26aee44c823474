package server

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// resettingEngine is a fake engine whose prefix cache resets succeed
// unless busy (blocks held for running requests, as the engine answers
// when not asked to reset those).
type resettingEngine struct {
	*fakeEngine
	busy  bool
	calls []bool // each call's resetRunning
}

func (r *resettingEngine) ResetPrefixCache(ctx context.Context, resetRunning bool) (bool, error) {
	r.calls = append(r.calls, resetRunning)
	return !r.busy || resetRunning, nil
}

// TestResetPrefixCache: vLLM's POST /reset_prefix_cache answers
// {"success"} with reset_running_requests passed on; SGLang's
// /flush_cache (GET or POST) answers its text, 400 when requests still
// hold blocks; engines that cannot reset answer 501.
func TestResetPrefixCache(t *testing.T) {
	nowUnix = func() int64 { return 1700000000 }
	eng := &resettingEngine{fakeEngine: &fakeEngine{}}
	ts := httptest.NewServer(New(Config{ServedModelName: "dummy", MaxModelLen: 64, BlockSize: 16, NumBlocks: 16, MaxRequestBody: "1K"}, eng, tokenizer.NewByte()).Handler())
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		method, path string
		busy         bool
		code         int
		body         string
	}{
		{"POST", "/reset_prefix_cache", false, 200, `{"success":true}` + "\n"},
		{"POST", "/reset_prefix_cache", true, 200, `{"success":false}` + "\n"},
		{"POST", "/reset_prefix_cache?reset_running_requests=true&reset_external=true", true, 200, `{"success":true}` + "\n"},
		{"POST", "/flush_cache", false, 200, "Cache flushed.\n"},
		{"GET", "/flush_cache", false, 200, "Cache flushed.\n"},
		{"POST", "/flush_cache", true, 400, "Cache not flushed: requests still hold cached blocks; retry when they have finished.\n"},
	} {
		eng.busy = tc.busy
		if code, body := do(t, ts, tc.method, tc.path, "", nil); code != tc.code || body != tc.body {
			t.Errorf("%s %s (busy %v): %d %q, want %d %q", tc.method, tc.path, tc.busy, code, body, tc.code, tc.body)
		}
	}
	if want := []bool{false, false, true, false, false, false}; !slices.Equal(eng.calls, want) {
		t.Errorf("reset_running_requests reached the engines as %v, want %v", eng.calls, want)
	}
	if code, _ := do(t, ts, "POST", "/reset_prefix_cache?reset_running_requests=maybe", "", nil); code != 400 {
		t.Errorf("a bad reset_running_requests: %d, want 400", code)
	}
	plain := newTestServer(t, &fakeEngine{}, "")
	if code, _ := postTo(t, plain.URL, "/reset_prefix_cache", ""); code != 501 {
		t.Errorf("engines without a reset: %d, want 501", code)
	}
}
