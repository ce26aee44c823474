package fleet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEvents drives the core and checks the events it records, in order.
func TestEvents(t *testing.T) {
	specs := []Spec{{Name: "a", Path: "dummy", Aliases: []string{"al"}}, {Name: "b", Path: "dummy"}}
	loading := []Event{{Kind: ModelStatus, Model: "a", Status: Loading}, {Kind: StatusChange, Model: "a", Status: Loading}}
	loaded := Event{Kind: StatusChange, Model: "a", Status: Loaded}
	tests := []struct {
		name string
		max  int
		do   func(f *Fleet)
		want []Event
	}{
		{"reload", 0, func(f *Fleet) { f.Sync(specs[:1]) },
			[]Event{{Kind: ModelsReload, Model: "*"}}},
		{"load", 0, func(f *Fleet) { f.Start("a", 1); f.Ready("a") },
			append(loading, loaded)},
		{"alias names the model", 0, func(f *Fleet) { f.Start("al", 1) },
			loading},
		{"unload", 0, func(f *Fleet) { f.Start("a", 1); f.Ready("a"); f.Stop("a"); f.Exited("a", -1, true) },
			append(loading, loaded, Event{Kind: StatusChange, Model: "a", Status: Unloaded})},
		{"crash while loading", 0, func(f *Fleet) { f.Start("a", 1); f.Exited("a", 3, true) },
			append(loading, Event{Kind: StatusChange, Model: "a", Status: Unloaded, ExitCode: 3})},
		{"stopped before healthy", 0, func(f *Fleet) { f.Start("a", 1); f.Stop("a"); f.Ready("a"); f.Exited("a", 1, true) },
			append(loading, Event{Kind: StatusChange, Model: "a", Status: Unloaded})},
		{"already running", 0, func(f *Fleet) { f.Start("a", 1); f.Events(); f.Start("a", 2); f.Ready("a"); f.Ready("a") },
			[]Event{loaded}},
		{"limit", 1, func(f *Fleet) { f.Start("b", 1); f.Events(); f.Start("a", 2) },
			nil},
		{"requests and the queue", 1, func(f *Fleet) {
			f.Start("b", 1)
			f.Ready("b")
			f.Events()
			f.Acquire("b", true)
			w := Waiter{Queued: f.Want("a").Queued}
			f.Step("a", &w, false)
			f.Release("b")
		}, nil},
		{"dropped while running", 0, func(f *Fleet) { f.Start("a", 1); f.Ready("a"); f.Sync(specs[1:]); f.Stop("a"); f.Exited("a", 0, false) },
			append(loading, loaded, Event{Kind: ModelsReload, Model: "*"},
				Event{Kind: StatusChange, Model: "a", Status: Unloaded}, Event{Kind: ModelRemove, Model: "a"})},
		{"unknown model", 0, func(f *Fleet) { f.Start("x", 1); f.Ready("x"); f.Exited("x", 1, false) },
			nil},
		{"download", 0, func(f *Fleet) {
			f.Download("o/r:F16")
			f.Progress("o/r:F16", "u1", 0, 10)
			f.Progress("o/r:F16", "u2", 5, 0)
			f.Progress("o/r:F16", "u1", 10, 10)
			f.Downloaded("o/r:F16", true)
			f.Sync(append(specs, Spec{Name: "o/r:F16", Source: "cache"}))
		}, []Event{
			{Kind: ModelStatus, Model: "o/r:F16", Status: Downloading},
			{Kind: DownloadProgress, Model: "o/r:F16", Progress: map[string]Transfer{"u1": {0, 10}}},
			{Kind: DownloadProgress, Model: "o/r:F16", Progress: map[string]Transfer{"u1": {0, 10}, "u2": {5, 0}}},
			{Kind: DownloadProgress, Model: "o/r:F16", Progress: map[string]Transfer{"u1": {10, 10}, "u2": {5, 0}}},
			{Kind: DownloadFinished, Model: "o/r:F16"},
			{Kind: ModelsReload, Model: "*"},
		}},
		{"download fails, then nothing more", 0, func(f *Fleet) {
			f.Download("o/r")
			f.Downloaded("o/r", false)
			f.Progress("o/r", "u1", 1, 10)
			f.Downloaded("o/r", true)
		}, []Event{{Kind: ModelStatus, Model: "o/r", Status: Downloading}, {Kind: DownloadFailed, Model: "o/r"}}},
		{"download of a name or alias the fleet has", 0, func(f *Fleet) { f.Download("b"); f.Download("al") },
			nil},
		{"no load of a download", 0, func(f *Fleet) { f.Download("o/r"); f.Events(); f.Start("o/r", 1); f.Ready("o/r"); f.Stop("o/r") },
			nil},
		{"forget", 0, func(f *Fleet) { f.Forget("b"); f.Forget("gone") },
			[]Event{{Kind: ModelRemove, Model: "b"}, {Kind: ModelRemove, Model: "gone"}}},
		{"forget waits for the child and the download", 0, func(f *Fleet) {
			f.Start("a", 1)
			f.Download("o/r")
			f.Events()
			f.Forget("a")
			f.Forget("o/r")
			f.Downloaded("o/r", false)
			f.Forget("o/r")
		}, []Event{{Kind: DownloadFailed, Model: "o/r"}, {Kind: ModelRemove, Model: "o/r"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(tt.max)
			f.Sync(specs)
			f.Events()
			tt.do(f)
			if diff := cmp.Diff(tt.want, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := f.Events(); got != nil {
				t.Errorf("Events after draining = %v, want none", got)
			}
		})
	}
}

func TestSSEEvent(t *testing.T) {
	tests := []struct {
		in   Event
		want string
	}{
		{Event{Kind: ModelStatus, Model: "a", Status: Loading}, `{"model":"a","event":"model_status","data":{"status":"loading"}}`},
		{Event{Kind: StatusChange, Model: "a", Status: Loaded}, `{"model":"a","event":"status_change","data":{"status":"loaded"}}`},
		{Event{Kind: StatusChange, Model: "a", Status: Unloaded, ExitCode: 3}, `{"model":"a","event":"status_change","data":{"exit_code":3,"status":"unloaded"}}`},
		{Event{Kind: ModelRemove, Model: "a"}, `{"model":"a","event":"model_remove"}`},
		{Event{Kind: ModelsReload, Model: "*"}, `{"model":"*","event":"models_reload"}`},
		{Event{Kind: ModelStatus, Model: "o/r", Status: Downloading}, `{"model":"o/r","event":"model_status","data":{"status":"downloading"}}`},
		{Event{Kind: DownloadProgress, Model: "o/r", Progress: map[string]Transfer{"http://h/o/r/resolve/c/m-F16.gguf": {Done: 5, Total: 9}}},
			`{"model":"o/r","event":"download_progress","data":{"progress":{"http://h/o/r/resolve/c/m-F16.gguf":{"done":5,"total":9}}}}`},
		{Event{Kind: DownloadFinished, Model: "o/r"}, `{"model":"o/r","event":"download_finished"}`},
		{Event{Kind: DownloadFailed, Model: "o/r"}, `{"model":"o/r","event":"download_failed"}`},
	}
	for _, tt := range tests {
		if got, want := string(sseEvent(tt.in)), "data: "+tt.want+"\n\n"; got != want {
			t.Errorf("sseEvent(%+v) = %q, want %q", tt.in, got, want)
		}
	}
}
