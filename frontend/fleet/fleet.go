package fleet

import (
	"errors"
	"slices"
	"strings"
)

// Status is a model's state, as llama-server names it in /models.
type Status int

// The states of a model.
const (
	Unloaded Status = iota // no child (never started, stopped or failed)
	Loading                // child started, not yet healthy
	Loaded                 // child healthy, taking requests
)

func (s Status) String() string {
	switch s {
	case Loading:
		return "loading"
	case Loaded:
		return "loaded"
	}
	return "unloaded"
}

// Model is one model's state in the fleet.
type Model struct {
	Spec
	Status   Status
	Port     int   // the child's port while it runs
	LastUsed int64 // the fleet's clock at the last load or POST
	Busy     int   // requests being proxied to it
	ExitCode int   // the last child's exit status (0 when stopped on purpose)
	Stopping bool  // asked to stop, not yet exited
}

// Running reports whether the model holds a slot (loading or loaded).
func (m *Model) Running() bool { return m.Status != Unloaded }

// Failed reports whether the last child ended by itself with an error.
func (m *Model) Failed() bool { return m.Status == Unloaded && m.ExitCode != 0 }

// entry is a queue entry: the requests waiting for one model.
type entry struct {
	model       string
	waiters     int
	slotPending bool // a model is already being given up for it
	loading     bool // one of its waiters is loading it now
}

func (e *entry) needsSlot() bool { return !e.slotPending && !e.loading }

// Fleet is the router's pure state: models, slots and the wait queue.
// It is not safe for concurrent use; Router guards it with a mutex.
type Fleet struct {
	Max    int // models running at once; ≤ 0 = no limit
	models map[string]*Model
	queue  []entry
	clock  int64
	events []Event // recorded changes, until Events drains them
}

// ErrLimit is a load with every slot taken.
var ErrLimit = errors.New("model limit reached, try again later")

// New returns a fleet of at most max running models (≤ 0: no limit).
func New(max int) *Fleet { return &Fleet{Max: max, models: map[string]*Model{}} }

// Sync replaces the catalog with specs. Models that stay keep their state;
// it returns the names of running models no longer in the catalog (the
// caller stops them; they stay listed until they exit). It records
// ModelsReload; the models it drops get no event of their own, as in
// llama-server's reload.
func (f *Fleet) Sync(specs []Spec) (gone []string) {
	keep := map[string]bool{}
	for _, s := range specs {
		keep[s.Name] = true
		if m, ok := f.models[s.Name]; ok {
			m.Spec = s
		} else {
			f.models[s.Name] = &Model{Spec: s}
		}
	}
	for name, m := range f.models {
		if keep[name] {
			continue
		}
		if m.Running() {
			gone = append(gone, name)
		} else {
			delete(f.models, name)
		}
	}
	slices.Sort(gone)
	f.record(Event{Kind: ModelsReload, Model: "*"})
	return gone
}

// Get returns a copy of the model called name (or one of its aliases).
func (f *Fleet) Get(name string) (Model, bool) {
	if m := f.find(name); m != nil {
		return *m, true
	}
	return Model{}, false
}

func (f *Fleet) find(name string) *Model {
	if m, ok := f.models[name]; ok {
		return m
	}
	for _, m := range f.models {
		if slices.Contains(m.Aliases, name) {
			return m
		}
	}
	return nil
}

// List returns copies of all models, by name.
func (f *Fleet) List() []Model {
	out := make([]Model, 0, len(f.models))
	for _, m := range f.models {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (f *Fleet) running() int {
	n := 0
	for _, m := range f.models {
		if m.Running() {
			n++
		}
	}
	return n
}

// HasCapacity reports whether another model may start.
func (f *Fleet) HasCapacity() bool { return f.Max <= 0 || f.running() < f.Max }

// Victim is the least recently used idle loaded model other than exclude,
// the one to give up for a slot; "" when none can go.
func (f *Fleet) Victim(exclude string) string {
	var v *Model
	for name, m := range f.models {
		if name == exclude || m.Busy != 0 || m.Status != Loaded || m.Stopping {
			continue
		}
		if v == nil || m.LastUsed < v.LastUsed || (m.LastUsed == v.LastUsed && m.Name < v.Name) {
			v = m
		}
	}
	if v == nil {
		return ""
	}
	return v.Name
}

// Start marks an unloaded model loading on port. It returns false (and no
// error) when the model is already running, and ErrLimit when every slot
// is taken.
func (f *Fleet) Start(name string, port int) (bool, error) {
	m := f.find(name)
	if m == nil {
		return false, errors.New("model " + name + " is not found")
	}
	if m.Running() {
		return false, nil
	}
	if !f.HasCapacity() {
		return false, ErrLimit
	}
	f.clock++
	m.Status, m.Port, m.LastUsed, m.ExitCode, m.Stopping = Loading, port, f.clock, 0, false
	f.record(Event{Kind: ModelStatus, Model: m.Name, Status: Loading})
	f.record(Event{Kind: StatusChange, Model: m.Name, Status: Loading})
	return true, nil
}

// Ready marks a loading model loaded (its child answers /health).
func (f *Fleet) Ready(name string) {
	if m := f.find(name); m != nil && m.Status == Loading && !m.Stopping {
		m.Status = Loaded
		f.record(Event{Kind: StatusChange, Model: m.Name, Status: Loaded})
	}
}

// Stop marks a running model stopping; false if it is not running.
func (f *Fleet) Stop(name string) bool {
	m := f.find(name)
	if m == nil || !m.Running() {
		return false
	}
	m.Stopping = true
	return true
}

// Exited records that a model's child ended with code: a stop asked for
// counts as 0. A model gone from the catalog is forgotten (ModelRemove:
// the reload that dropped it kept it listed while it ran).
func (f *Fleet) Exited(name string, code int, inCatalog bool) {
	m := f.find(name)
	if m == nil {
		return
	}
	if m.Stopping {
		code = 0
	}
	was := m.Status
	m.Status, m.Port, m.ExitCode, m.Stopping = Unloaded, 0, code, false
	if was != Unloaded {
		f.record(Event{Kind: StatusChange, Model: m.Name, Status: Unloaded, ExitCode: code})
	}
	if !inCatalog {
		delete(f.models, m.Name)
		f.record(Event{Kind: ModelRemove, Model: m.Name})
	}
}

// Acquire counts a request proxied to name; a POST (touch) makes it the
// most recently used.
func (f *Fleet) Acquire(name string, touch bool) {
	if m := f.find(name); m != nil {
		m.Busy++
		if touch {
			f.clock++
			m.LastUsed = f.clock
		}
	}
}

// Release ends a request proxied to name. When the model goes idle and a
// queued request needs a slot that nothing else frees, it returns the
// model's name: the caller stops it.
func (f *Fleet) Release(name string) string {
	m := f.find(name)
	if m == nil || m.Busy == 0 {
		return ""
	}
	m.Busy--
	if m.Busy > 0 {
		return ""
	}
	return f.idle(m)
}

// idle is llama-server's on_model_idle: give the idle model's slot to a
// queued request unless one is already on its way or the queue wants it.
func (f *Fleet) idle(m *Model) string {
	if f.Max <= 0 || len(f.queue) == 0 {
		return ""
	}
	promised, unserved := 0, false
	for i := range f.queue {
		if f.queue[i].needsSlot() {
			unserved = true
		} else {
			promised++
		}
	}
	if !unserved || f.running()-promised < f.Max {
		return ""
	}
	for _, e := range f.queue {
		if e.model == m.Name {
			return ""
		}
	}
	if m.Status != Loaded || m.Stopping {
		return ""
	}
	for i := range f.queue {
		if !f.queue[i].slotPending {
			f.queue[i].slotPending = true
			break
		}
	}
	m.Stopping = true
	return m.Name
}
