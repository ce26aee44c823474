package fleet

import (
	"slices"
	"strings"
	"testing"
)

// loaded returns a fleet of max slots with names loaded in order (the
// last is the most recently used) and others unloaded.
func loaded(max int, names []string, others ...string) *Fleet {
	f := New(max)
	var specs []Spec
	for _, n := range append(slices.Clone(names), others...) {
		specs = append(specs, Spec{Name: n, Path: "dummy"})
	}
	f.Sync(specs)
	for i, n := range names {
		if ok, err := f.Start(n, 1000+i); !ok || err != nil {
			panic(err)
		}
		f.Ready(n)
	}
	return f
}

func TestWant(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		loaded []string
		busy   []string
		want   string
		plan   Plan
		queue  []string
	}{
		{"loaded", 2, []string{"a"}, nil, "a", Plan{Ready: true}, []string{}},
		{"free slot", 2, []string{"a"}, nil, "b", Plan{Load: true}, []string{}},
		{"no limit", 0, []string{"a", "b"}, nil, "c", Plan{Load: true}, []string{}},
		{"full: evict lru", 2, []string{"a", "b"}, nil, "c", Plan{Queued: true, Evict: "a"}, []string{"c"}},
		{"full: busy lru kept", 2, []string{"a", "b"}, []string{"a"}, "c", Plan{Queued: true, Evict: "b"}, []string{"c"}},
		{"full: all busy", 1, []string{"a"}, []string{"a"}, "b", Plan{Queued: true}, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loaded(tt.max, tt.loaded, "a", "b", "c")
			for _, b := range tt.busy {
				f.Acquire(b, false)
			}
			if got := f.Want(tt.want); got != tt.plan {
				t.Errorf("Want(%s) = %+v, want %+v", tt.want, got, tt.plan)
			}
			if got := f.Queue(); !slices.Equal(got, tt.queue) {
				t.Errorf("queue = %v, want %v", got, tt.queue)
			}
		})
	}
}

// TestQueueBusyModelKept is test_router_queue_does_not_evict_busy_model:
// a request for b waits while a is busy; a goes when its request ends.
func TestQueueBusyModelKept(t *testing.T) {
	f := loaded(1, []string{"a"}, "b")
	f.Acquire("a", true)
	p := f.Want("b")
	if !p.Queued || p.Evict != "" {
		t.Fatalf("Want(b) = %+v, want queued without a victim", p)
	}
	w := Waiter{Queued: true}
	if v := f.Step("b", &w, false); v != Wait {
		t.Fatalf("Step while a is busy = %v, want Wait", v)
	}
	if v := f.Release("a"); v != "a" {
		t.Fatalf("Release(a) = %q, want a given up", v)
	}
	f.Stop("a")
	f.Exited("a", 0, true)
	if v := f.Step("b", &w, false); v != Claim {
		t.Fatalf("Step after a exited = %v, want Claim", v)
	}
	if ok, err := f.Start("b", 2000); !ok || err != nil {
		t.Fatalf("Start(b) = %v, %v", ok, err)
	}
	f.Claimed("b", &w, true)
	if len(f.Queue()) != 0 || w.Queued {
		t.Fatalf("queue %v after the claim, want empty", f.Queue())
	}
	f.Ready("b")
	if v := f.Step("b", &w, false); v != Proceed {
		t.Fatalf("Step after b loaded = %v, want Proceed", v)
	}
}

// TestQueueCoalesces: three requests for c share one entry, and only one
// model (the idle b) is given up.
func TestQueueCoalesces(t *testing.T) {
	f := loaded(2, []string{"a", "b"}, "c")
	f.Acquire("a", true)
	plans := []Plan{f.Want("c"), f.Want("c"), f.Want("c")}
	if plans[0].Evict != "b" {
		t.Fatalf("first Want(c) = %+v, want b evicted", plans[0])
	}
	f.Stop("b")
	for _, p := range plans[1:] {
		if p.Evict != "" {
			t.Fatalf("later Want(c) = %+v, want no second victim", p)
		}
	}
	if q := f.Queue(); !slices.Equal(q, []string{"c"}) {
		t.Fatalf("queue = %v, want one entry", q)
	}
	f.Exited("b", 0, true)
	if v := f.Release("a"); v != "" {
		t.Fatalf("Release(a) = %q, want a kept (c's slot is on its way)", v)
	}
}

func TestQueueCancelAndFIFO(t *testing.T) {
	f := loaded(1, []string{"a"}, "b", "c")
	f.Acquire("a", true)
	wb, wc := Waiter{Queued: f.Want("b").Queued}, Waiter{Queued: f.Want("c").Queued}
	if v := f.Step("c", &wc, true); v != Cancelled {
		t.Fatalf("stopped Step = %v, want Cancelled", v)
	}
	f.Leave("c", &wc)
	if q := f.Queue(); !slices.Equal(q, []string{"b"}) {
		t.Fatalf("queue = %v, want [b]", q)
	}
	f.Leave("b", &wb)
	if v := f.Release("a"); v != "" {
		t.Fatalf("Release(a) with nobody waiting = %q, want a kept", v)
	}
}

func TestStartLimitAndFailure(t *testing.T) {
	f := loaded(1, []string{"a"}, "b")
	if _, err := f.Start("b", 1); err != ErrLimit {
		t.Fatalf("Start past the limit: %v, want ErrLimit", err)
	}
	f.Stop("a")
	f.Exited("a", 0, true)
	f.Start("b", 1)
	f.Exited("b", 3, true)
	m, _ := f.Get("b")
	if !m.Failed() || m.ExitCode != 3 {
		t.Fatalf("b = %+v, want failed with 3", m)
	}
	w := Waiter{DidLoad: true}
	if v := f.Step("b", &w, false); v != Failed {
		t.Fatalf("Step = %v, want Failed", v)
	}
}

func TestConvs(t *testing.T) {
	var c Convs
	if c.Remember("", "a") != 0 {
		t.Fatal("no id should give ticket 0")
	}
	t1 := c.Remember("x", "a")
	if !c.Alive("x", t1) {
		t.Fatal("fresh entry not alive")
	}
	t2 := c.Remember("x", "b")
	if c.Alive("x", t1) || !c.Alive("x", t2) {
		t.Fatal("a newer request should replace the entry")
	}
	if m, _ := c.Owner("x"); m != "b" {
		t.Fatalf("owner = %s", m)
	}
	c.Forget("x")
	if c.Alive("x", t2) {
		t.Fatal("forgotten entry alive")
	}
}

func TestParseINI(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Section
		err      bool
	}{
		{"sections", "[*]\nc = 1024 ; comment\n\n# note\n[a]\nmodel = /m/a.gguf\n",
			[]Section{{"*", []Option{{"c", "1024"}}}, {"a", []Option{{"model", "/m/a.gguf"}}}}, false},
		{"keys before a header", "version = 1\n[b]\nhf-repo = o/r\n",
			[]Section{{"", []Option{{"version", "1"}}}, {"b", []Option{{"hf-repo", "o/r"}}}}, false},
		{"bad line", "[a]\nnot a pair\n", nil, true},
		{"bad header", "[a\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseINI(strings.NewReader(tt.in))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if !tt.err && !slices.EqualFunc(got, tt.want, func(a, b Section) bool {
				return a.Name == b.Name && slices.Equal(a.Options, b.Options)
			}) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	s := Spec{Options: []Option{{"ctx-size", "512"}, {"LLAMA_ARG_N_PARALLEL", "2"}, {"hf-repo", "o/r"}, {"threads", "1"}, {"flash-attn", "on"}}}
	known := func(f string) bool { return f == "max-model-len" || f == "threads" }
	args, ignored := s.Args(known)
	if want := []string{"--max-model-len=512", "--threads=1"}; !slices.Equal(args, want) {
		t.Errorf("args = %v, want %v", args, want)
	}
	if want := []string{"LLAMA_ARG_N_PARALLEL", "flash-attn"}; !slices.Equal(ignored, want) {
		t.Errorf("ignored = %v, want %v", ignored, want)
	}
}

// TestDownloadStatus: a download is a model of the cache that holds no
// slot, is never loaded, lets a waiting request through, survives reloads
// while it runs and gives way to the catalog's model once it ended.
func TestDownloadStatus(t *testing.T) {
	cached := Spec{Name: "o/r:F16", Source: "cache", Path: "/c/m-F16.gguf"}
	tests := []struct {
		name    string
		do      func(f *Fleet)
		status  Status // of o/r:F16 at the end
		present bool
		path    string
	}{
		{"downloading", func(f *Fleet) {}, Downloading, true, ""},
		{"kept by a reload", func(f *Fleet) { f.Sync(nil) }, Downloading, true, ""},
		{"a reload that lists it keeps it downloading", func(f *Fleet) { f.Sync([]Spec{cached}) }, Downloading, true, cached.Path},
		{"never started", func(f *Fleet) { f.Start("o/r:F16", 1); f.Ready("o/r:F16") }, Downloading, true, ""},
		{"ended", func(f *Fleet) { f.Downloaded("o/r:F16", true) }, Downloaded, true, ""},
		{"ended, the reload lists the cache's", func(f *Fleet) { f.Downloaded("o/r:F16", true); f.Sync([]Spec{cached}) }, Unloaded, true, cached.Path},
		{"failed, the reload drops it", func(f *Fleet) { f.Downloaded("o/r:F16", false); f.Sync(nil) }, Unloaded, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loaded(1, []string{"a"})
			if err := f.Download("o/r:F16"); err != nil {
				t.Fatal(err)
			}
			if err := f.Download("o/r:F16"); err != ErrExists {
				t.Fatalf("second Download = %v, want ErrExists", err)
			}
			tt.do(f)
			m, ok := f.Get("o/r:F16")
			if ok != tt.present || ok && (m.Status != tt.status || m.Path != tt.path || m.Source != "cache") {
				t.Fatalf("o/r:F16 = %+v (present %v), want %v at %q (present %v)", m, ok, tt.status, tt.path, tt.present)
			}
			if ok && m.Running() {
				t.Error("a download counts as running")
			}
			if f.running() != 1 {
				t.Errorf("running = %d, want a's slot only", f.running())
			}
			if ok && m.Status == Downloading {
				if p := f.Want("o/r:F16"); p != (Plan{}) {
					t.Errorf("Want = %+v, want nothing to do", p)
				}
				if v := f.Step("o/r:F16", &Waiter{}, false); v != Proceed {
					t.Errorf("Step = %v, want Proceed (the proxy says it is not running)", v)
				}
			}
		})
	}
}

func TestRemovable(t *testing.T) {
	f := New(0)
	f.Sync([]Spec{{Name: "o/r:Q8_0", Source: "cache"}, {Name: "p", Source: "preset", Aliases: []string{"o/r:al"}}})
	f.Download("o/d")
	tests := []struct {
		name string
		err  error
	}{
		{"o/r:Q8_0", nil},
		{"o/d", nil},
		{"p", ErrNotRemovable},
		{"o/r:al", ErrNotFound}, // an alias is no name here, as in llama-server
		{"nope", ErrNotFound},
	}
	for _, tt := range tests {
		if m, err := f.Removable(tt.name); err != tt.err || err == nil && m.Name != tt.name {
			t.Errorf("Removable(%s) = %s, %v; want %v", tt.name, m.Name, err, tt.err)
		}
	}
}
