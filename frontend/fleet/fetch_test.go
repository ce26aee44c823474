package fleet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFetch drives a load that downloads its model first: the events
// each way it ends, and the model's state at the end.
func TestFetch(t *testing.T) {
	specs := []Spec{
		{Name: "p", Source: "preset", Options: []Option{{"hf", "o/r:Q8_0"}}, Aliases: []string{"pa"}},
		{Name: "b", Path: "dummy"},
	}
	fetching := Event{Kind: ModelStatus, Model: "p", Status: Downloading}
	progress := Event{Kind: DownloadProgress, Model: "p", Progress: map[string]Transfer{"u": {5, 10}}}
	loading := []Event{{Kind: ModelStatus, Model: "p", Status: Loading}, {Kind: StatusChange, Model: "p", Status: Loading}}
	tests := []struct {
		name    string
		do      func(f *Fleet) bool // the last Fetched's answer
		want    []Event
		status  Status // of p at the end
		present bool
		failed  bool
		path    string
	}{
		{"downloads, then loads", func(f *Fleet) bool {
			f.Fetch("pa")
			f.Progress("p", "u", 5, 10)
			ok := f.Fetched("p", "/c/r-Q8_0.gguf", 7, true)
			f.Ready("p")
			return ok
		}, append(append([]Event{fetching, progress, {Kind: DownloadFinished, Model: "p"}}, loading...),
			Event{Kind: StatusChange, Model: "p", Status: Loaded}), Loaded, true, false, "/c/r-Q8_0.gguf"},
		{"the download fails", func(f *Fleet) bool { f.Fetch("p"); return f.Fetched("p", "", 0, true) },
			[]Event{fetching, {Kind: DownloadFailed, Model: "p"}, {Kind: StatusChange, Model: "p", Status: Unloaded, ExitCode: 1}},
			Unloaded, true, true, ""},
		{"unloaded while downloading", func(f *Fleet) bool { f.Fetch("p"); f.Stop("p"); return f.Fetched("p", "", 0, true) },
			[]Event{fetching, {Kind: DownloadFailed, Model: "p"}, {Kind: StatusChange, Model: "p", Status: Unloaded}},
			Unloaded, true, false, ""},
		{"unloaded as the download ends", func(f *Fleet) bool { f.Fetch("p"); f.Stop("p"); return f.Fetched("p", "/c/x.gguf", 7, true) },
			[]Event{fetching, {Kind: DownloadFinished, Model: "p"}, {Kind: StatusChange, Model: "p", Status: Unloaded}},
			Unloaded, true, false, ""},
		{"dropped by a reload while downloading", func(f *Fleet) bool {
			f.Fetch("p")
			if gone := f.Sync(specs[1:]); !cmp.Equal(gone, []string{"p"}) {
				t.Errorf("Sync dropping p = %v, want p to stop", gone)
			}
			f.Stop("p")
			return f.Fetched("p", "/c/x.gguf", 7, false)
		}, []Event{fetching, {Kind: ModelsReload, Model: "*"}, {Kind: DownloadFinished, Model: "p"},
			{Kind: StatusChange, Model: "p", Status: Unloaded}, {Kind: ModelRemove, Model: "p"}},
			Unloaded, false, false, ""},
		{"kept by a reload that lists it", func(f *Fleet) bool { f.Fetch("p"); f.Sync(specs); return false },
			[]Event{fetching, {Kind: ModelsReload, Model: "*"}}, Downloading, true, false, ""},
		{"once only", func(f *Fleet) bool {
			f.Fetch("p")
			if ok, err := f.Fetch("p"); ok || err != nil {
				t.Errorf("second Fetch = %v, %v; want false, nil", ok, err)
			}
			if ok, err := f.Start("p", 1); ok || err != nil {
				t.Errorf("Start while fetching = %v, %v; want false, nil", ok, err)
			}
			f.Downloaded("p", true) // a POST /models download's end: not this one's
			return false
		}, []Event{fetching}, Downloading, true, false, ""},
		{"an unknown or idle model", func(f *Fleet) bool {
			if _, err := f.Fetch("x"); err == nil {
				t.Error("Fetch of an unknown model: no error")
			}
			return f.Fetched("p", "/c/x.gguf", 1, true)
		}, nil, Unloaded, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(0)
			f.Sync(specs)
			f.Events()
			start := tt.do(f)
			if diff := cmp.Diff(tt.want, f.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			m, ok := f.Get("p")
			if ok != tt.present || ok && (m.Status != tt.status || m.Failed() != tt.failed || m.Path != tt.path) {
				t.Errorf("p = %+v (present %v), want %v failed %v path %q (present %v)", m, ok, tt.status, tt.failed, tt.path, tt.present)
			}
			if want := tt.status == Loaded; start != want {
				t.Errorf("Fetched = %v, want %v", start, want)
			}
			if ok && m.Status != Downloading && (m.Fetching || m.Progress != nil) {
				t.Errorf("p = %+v: the download's state outlives it", m)
			}
		})
	}
}

// TestFetchHoldsSlot: a load's download takes a slot, as a loading
// child does, and a request that waits for the model waits through it
// and sees how the load ended.
func TestFetchHoldsSlot(t *testing.T) {
	f := New(1)
	f.Sync([]Spec{{Name: "p", Options: []Option{{"hf-repo", "o/r"}}}, {Name: "b", Path: "dummy"}})
	if p := f.Want("p"); p != (Plan{Load: true}) {
		t.Fatalf("Want(p) = %+v, want a load", p)
	}
	if ok, err := f.Fetch("p"); !ok || err != nil {
		t.Fatalf("Fetch = %v, %v", ok, err)
	}
	w := Waiter{DidLoad: true}
	if v := f.Step("p", &w, false); v != Wait {
		t.Errorf("Step while fetching = %v, want Wait", v)
	}
	if v := f.Step("p", &w, true); v != Cancelled {
		t.Errorf("Step of a stopped request while fetching = %v, want Cancelled", v)
	}
	if _, err := f.Start("b", 1); err != ErrLimit {
		t.Errorf("Start(b) while p fetches = %v, want ErrLimit", err)
	}
	if p := f.Want("b"); !p.Queued || p.Evict != "" {
		t.Errorf("Want(b) while p fetches = %+v, want queued, nothing to evict", p)
	}
	if m, _ := f.Get("p"); !m.HoldsSlot() || m.Running() {
		t.Errorf("p fetching = %+v: want a slot and no child", m)
	}
	f.Fetched("p", "", 0, true)
	if v := f.Step("p", &w, false); v != Failed {
		t.Errorf("Step after a failed download = %v, want Failed", v)
	}
	if !f.HasCapacity() {
		t.Error("the failed download kept its slot")
	}
}

func TestSpecRemote(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Options: []Option{{"hf-repo", "o/r:Q8_0"}}}, "o/r:Q8_0"},
		{Spec{Options: []Option{{"hf-repo", "o/a"}, {"LLAMA_ARG_HF_REPO", "o/b"}}}, "o/b"},
		{Spec{Options: []Option{{"hfr", "o/r"}}}, "o/r"},
		{Spec{Path: "/c/m.gguf", Options: []Option{{"hf", "o/r"}}}, ""},
		{Spec{Options: []Option{{"model", "m.gguf"}}}, ""},
	}
	for _, tt := range tests {
		if got := tt.spec.Remote(); got != tt.want {
			t.Errorf("%+v.Remote() = %q, want %q", tt.spec, got, tt.want)
		}
	}
}
