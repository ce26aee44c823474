package fleet

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/hfhub"
	"github.com/tandem-llm/tandem/frontend/hfhub/hubtest"
)

// presetINI is the preset repository o/presets: p fetches o/r when it
// loads, slow a file that stalls, gone a repository the hub lacks.
const presetINI = `[*]
ctx-size = 256

[p]
hf = o/r:Q8_0

[slow]
hf-repo = o/slow

[gone]
hf-repo = o/missing
`

func presetHub(t *testing.T) *hubtest.Hub {
	hub := hubtest.New(t)
	hub.Add("o/presets", map[string][]byte{"preset.ini": []byte(presetINI), "README.md": []byte("# presets\n")})
	hub.Add("o/r", map[string][]byte{"r-Q8_0.gguf": bytes.Repeat([]byte("q8"), 2000)})
	hub.Add("o/slow", map[string][]byte{"s-Q8_0.gguf": bytes.Repeat([]byte("s"), 4096)})
	hub.Stall("s-Q8_0.gguf")
	return hub
}

func hubClient(t *testing.T, hub *hubtest.Hub, cache string) *hfhub.Client {
	t.Helper()
	c, err := hfhub.New(hfhub.Options{Endpoint: hub.URL, CacheDir: cache, HTTP: hub.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRemotePreset: -hf's preset.ini comes from the hub into the cache,
// else from the cache (offline, or when the hub fails); a model
// repository is refused before anything is fetched.
func TestRemotePreset(t *testing.T) {
	hub := presetHub(t)
	cache := t.TempDir()
	c := hubClient(t, hub, cache)
	ctx := context.Background()
	want := filepath.Join(cache, "models--o--presets", "snapshots", hubtest.Commit, "preset.ini")

	if _, err := RemotePreset(ctx, c, "o/presets", true); !errors.Is(err, hfhub.ErrNotFound) {
		t.Errorf("offline, not cached: %v, want ErrNotFound", err)
	}
	p, err := RemotePreset(ctx, c, "o/presets:ANY", false)
	if err != nil || p != want {
		t.Fatalf("RemotePreset = %q, %v; want %q", p, err, want)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != presetINI {
		t.Fatalf("the preset: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(p), "README.md")); err == nil {
		t.Error("fetched more than the preset.ini")
	}
	if p, err := RemotePreset(ctx, c, "o/presets", true); err != nil || p != want {
		t.Errorf("offline, cached: %q, %v", p, err)
	}
	hub.Private("o/presets", true)
	if p, err := RemotePreset(ctx, c, "o/presets", false); err != nil || p != want {
		t.Errorf("the hub refuses, cached: %q, %v", p, err)
	}
	if _, err := RemotePreset(ctx, c, "o/r", false); !errors.Is(err, ErrNotPreset) {
		t.Errorf("a model repository: %v, want ErrNotPreset", err)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "models--o--r", "snapshots", "*", "*")); len(m) != 0 {
		t.Errorf("a model repository's files were fetched: %v", m)
	}
	if _, err := RemotePreset(ctx, c, "o/missing", false); !errors.Is(err, hfhub.ErrNotFound) {
		t.Errorf("a missing repository: %v, want ErrNotFound", err)
	}
	if _, err := RemotePreset(ctx, c, "no-owner", false); !errors.Is(err, hfhub.ErrInvalidName) {
		t.Errorf("a bad name: %v, want ErrInvalidName", err)
	}
}

// presetRouter runs a router over o/presets's preset.ini and an empty
// cache, downloading from hub; fake children.
func presetRouter(t *testing.T, hub *hubtest.Hub, offline bool) (*Router, *httptest.Server, *hfhub.Client) {
	t.Helper()
	c := hubClient(t, hub, t.TempDir())
	preset, err := RemotePreset(context.Background(), c, "o/presets", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(Config{
		Sources: Sources{Cache: c.CacheDir(), Preset: preset}, Hub: c, Offline: offline, APIKeys: []string{"k"}, Autoload: true,
		Command: func(s Spec, port int) ([]string, error) {
			return []string{os.Args[0], "fake-child", strconv.Itoa(port)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(r.Handler())
	t.Cleanup(func() { ts.Close(); r.Close() })
	return r, ts, c
}

func statusOf(t *testing.T, ts *httptest.Server, id string) map[string]any {
	t.Helper()
	m := listed(t, ts, id)
	if m == nil {
		t.Fatalf("%s is not listed", id)
	}
	return m["status"].(map[string]any)
}

// TestRouterLoadDownloads: a preset model whose hf-repo the cache lacks
// downloads when it loads (downloading, progress, then loading and
// loaded), from a request's autoload too; a download that fails fails the
// load; an unload cancels one.
func TestRouterLoadDownloads(t *testing.T) {
	hub := presetHub(t)
	r, ts, c := presetRouter(t, hub, false)
	ev := subscribe(t, ts)
	for _, id := range []string{"p", "slow", "gone"} {
		if st := statusOf(t, ts, id); st["value"] != "unloaded" {
			t.Errorf("%s before any load: %v", id, st)
		}
	}

	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"p"}`, false); code != 200 {
		t.Fatalf("load p: %d %s", code, msg)
	}
	expect(t, ev, "p model_status downloading", "p download_progress", "p download_finished",
		"p model_status loading", "p status_change loading", "p status_change loaded")
	local, err := c.Local("o/r:Q8_0")
	r.mu.Lock()
	m, _ := r.fleet.Get("p")
	r.mu.Unlock()
	if err != nil || m.Path != local.Path || m.Progress != nil {
		t.Errorf("p = %+v after its download, want the file %+v (%v)", m, local, err)
	}
	if code, _, msg := call(t, ts, "POST", "/models/unload", `{"model":"p"}`, false); code != 200 {
		t.Fatalf("unload p: %d %s", code, msg)
	}
	expect(t, ev, "p status_change unloaded 0")
	call(t, ts, "GET", "/models?reload=1", "", false)
	expect(t, ev, "* models_reload")
	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"p"}`, false); code != 200 {
		t.Fatalf("load p again: %d %s", code, msg)
	}
	expect(t, ev, "p model_status loading", "p status_change loading", "p status_change loaded") // from the cache now

	chat := `{"model":"gone","messages":[{"role":"user","content":"hi"}]}`
	if code, _, msg := call(t, ts, "POST", "/v1/chat/completions", chat, false); code != 500 || !strings.Contains(msg, "model gone failed to load") {
		t.Errorf("chat with gone: %d %s, want 500 failed to load", code, msg)
	}
	expect(t, ev, "gone model_status downloading", "gone download_failed", "gone status_change unloaded 1")
	if st := statusOf(t, ts, "gone"); st["value"] != "unloaded" || st["failed"] != true {
		t.Errorf("gone after its failed download: %v", st)
	}

	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"slow"}`, false); code != 200 {
		t.Fatalf("load slow: %d %s", code, msg)
	}
	expect(t, ev, "slow model_status downloading", "slow download_progress")
	if st := statusOf(t, ts, "slow"); st["value"] != "downloading" {
		t.Errorf("slow mid-download: %v", st)
	}
	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"slow"}`, false); code != 400 || !strings.Contains(msg, "already running") {
		t.Errorf("load slow again: %d %s, want 400 already running", code, msg)
	}
	if code, _, msg := call(t, ts, "POST", "/models/unload", `{"model":"slow"}`, false); code != 200 {
		t.Fatalf("unload slow mid-download: %d %s", code, msg)
	}
	expect(t, ev, "slow download_failed", "slow status_change unloaded 0")
	if st := statusOf(t, ts, "slow"); st["value"] != "unloaded" || st["failed"] == true {
		t.Errorf("slow after the unload: %v", st)
	}
}

// TestRouterLoadOffline: offline, a preset model the cache lacks fails
// to load at once, downloading nothing.
func TestRouterLoadOffline(t *testing.T) {
	_, ts, c := presetRouter(t, presetHub(t), true)
	ev := subscribe(t, ts)
	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"p"}`, false); code != 200 {
		t.Fatalf("load p: %d %s", code, msg)
	}
	expect(t, ev, "p model_status loading", "p status_change loading", "p status_change unloaded 1")
	if _, err := c.Local("o/r:Q8_0"); err == nil {
		t.Error("offline, o/r was downloaded")
	}
}
