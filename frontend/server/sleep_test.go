package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// sleepyEngine is a fake engine with sleep mode: it records the calls.
type sleepyEngine struct {
	*fakeEngine
	calls  []string
	asleep bool
}

func (e *sleepyEngine) Sleep(_ context.Context, level int, mode string) error {
	e.calls, e.asleep = append(e.calls, fmt.Sprintf("sleep %d %s", level, mode)), true
	return nil
}

func (e *sleepyEngine) WakeUp(_ context.Context, tags []string) (bool, error) {
	e.calls = append(e.calls, fmt.Sprintf("wake_up %q", tags))
	e.asleep = len(tags) == 1 && tags[0] == "weights"
	return !e.asleep, nil
}

func (e *sleepyEngine) IsSleeping(context.Context) (bool, error) { return e.asleep, nil }

func (e *sleepyEngine) ReleaseKVCacheMemory(context.Context) error {
	e.calls = append(e.calls, "release_kv_cache_memory")
	return nil
}

func (e *sleepyEngine) Touch(context.Context) error {
	e.calls, e.asleep = append(e.calls, "touch"), false
	return nil
}

// TestSleepEndpoints: vLLM's sleep-mode routes (--enable-sleep-mode) pass
// level, mode and tags to the engines and answer in vLLM's shapes; bad
// queries are 400s naming the parameter and reach no engine; without the
// flag the routes do not exist.
func TestSleepEndpoints(t *testing.T) {
	eng := &sleepyEngine{fakeEngine: &fakeEngine{}}
	cfg := Config{ServedModelName: "dummy", MaxModelLen: 64, BlockSize: 16, NumBlocks: 16, Version: "test", EnableSleepMode: true}
	ts := httptest.NewServer(New(cfg, eng, tokenizer.NewByte()).Handler())
	defer ts.Close()
	for _, tc := range []struct {
		method, path string
		code         int
		body         string // a substring of the answer
		call         string // the engine call it makes, "" none
	}{
		{"POST", "/sleep", 200, `{"level":1,"status":"sleeping"}`, "sleep 1 abort"},
		{"GET", "/is_sleeping", 200, `{"is_sleeping":true}`, ""},
		{"POST", "/sleep?level=0&mode=keep", 200, `"level":0`, "sleep 0 keep"},
		{"POST", "/sleep?level=2&mode=wait", 200, `"level":2`, "sleep 2 wait"},
		{"POST", "/sleep?level=3", 400, `"param":"query.level"`, ""},
		{"POST", "/sleep?level=one", 400, `"param":"query.level"`, ""},
		{"POST", "/sleep?mode=later", 400, `"param":"query.mode"`, ""},
		{"POST", "/wake_up?tags=weights", 200, `{"status":"sleeping","tags":["weights"]}`, `wake_up ["weights"]`},
		{"POST", "/wake_up?tags=kv_cache&tags=scheduling", 200, `{"status":"awake","tags":["kv_cache","scheduling"]}`, `wake_up ["kv_cache" "scheduling"]`},
		{"POST", "/wake_up", 200, `{"status":"awake","tags":null}`, `wake_up []`},
		{"GET", "/is_sleeping", 200, `{"is_sleeping":false}`, ""},
		{"POST", "/release_kv_cache_memory", 200, `{"status":"kv_cache_released"}`, "release_kv_cache_memory"},
	} {
		before := len(eng.calls)
		code, body := do(t, ts, tc.method, tc.path, "", nil)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %s, want %d with %s", tc.method, tc.path, code, body, tc.code, tc.body)
		}
		var call string
		if len(eng.calls) > before {
			call = eng.calls[len(eng.calls)-1]
		}
		if call != tc.call {
			t.Errorf("%s %s: engine call %q, want %q", tc.method, tc.path, call, tc.call)
		}
	}

	// llama-server's side: /props says is_sleeping; /tokenize wakes the
	// engines that report sleeping.
	eng.asleep = true
	eng.fakeEngine.states = nil
	if _, body := do(t, ts, "GET", "/props", "", nil); !strings.Contains(body, `"is_sleeping":true`) {
		t.Errorf("/props while asleep: %s", body)
	}
	if code, body := do(t, ts, "GET", "/metrics", "", nil); code != 200 || !strings.Contains(body, `vllm:sleep_mode_operation_duration_seconds_count{operation="sleep"} 3`) {
		t.Errorf("/metrics: no 3 sleep operations timed:\n%s", body)
	}

	off := httptest.NewServer(New(Config{ServedModelName: "dummy", MaxModelLen: 64, Version: "test"}, eng, tokenizer.NewByte()).Handler())
	defer off.Close()
	if code, _ := do(t, off, "POST", "/sleep", "", nil); code != http.StatusNotFound {
		t.Errorf("/sleep without --enable-sleep-mode: %d, want 404", code)
	}
}
