package fleet

import (
	"errors"
	"maps"
	"slices"
	"strings"
)

// Status is a model's state, as llama-server names it in /models.
type Status int

// The states of a model. A download (POST /models) is a model of its
// own, llama-server's: downloading, then downloaded until the reload
// that follows it replaces the entry with the cache's model. A load
// that must first fetch the model's hf-repo is downloading too, with
// Model.Fetching set (fetch.go).
const (
	Unloaded    Status = iota // no child (never started, stopped or failed)
	Loading                   // child started, not yet healthy
	Loaded                    // child healthy, taking requests
	Downloading               // its files are being fetched into the cache
	Downloaded                // its download ended (either way); the next Sync drops it
)

func (s Status) String() string {
	switch s {
	case Loading:
		return "loading"
	case Loaded:
		return "loaded"
	case Downloading:
		return "downloading"
	case Downloaded:
		return "downloaded"
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
	// Progress is a download's files by URL, as llama-server's
	// loaded_info.progress; it is replaced at each change, never changed
	// in place, so copies of the Model may keep it.
	Progress map[string]Transfer
	// Fetching marks a load's download (Downloading): the catalog model's
	// hf-repo is coming into the cache, then its child starts. It holds a
	// slot as a loading model does.
	Fetching bool
}

// Transfer is how far the download of one file is, in bytes.
type Transfer struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"` // 0 if unknown
}

// Running reports whether the model has a child (loading or loaded).
func (m *Model) Running() bool { return m.Status == Loading || m.Status == Loaded }

// HoldsSlot reports whether the model counts against --models-max:
// running, or fetching its files for a load.
func (m *Model) HoldsSlot() bool { return m.Running() || m.Fetching }

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
// caller stops them; they stay listed until they exit; a load's
// download among them is cancelled). Downloads in progress stay; ended
// ones are dropped (what they fetched is in specs now). It records ModelsReload; the models it drops get no event of
// their own, as in llama-server's reload.
func (f *Fleet) Sync(specs []Spec) (gone []string) {
	for name, m := range f.models {
		if m.Status == Downloaded {
			delete(f.models, name)
		}
	}
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
		if keep[name] || m.Status == Downloading && !m.Fetching {
			continue
		}
		if m.HoldsSlot() {
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
		if m.HoldsSlot() {
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
// error) when the model is already running or downloading, and ErrLimit
// when every slot is taken.
func (f *Fleet) Start(name string, port int) (bool, error) {
	m, err := f.takeSlot(name)
	if m == nil {
		return false, err
	}
	m.Status, m.Port = Loading, port
	f.record(Event{Kind: ModelStatus, Model: m.Name, Status: Loading})
	f.record(Event{Kind: StatusChange, Model: m.Name, Status: Loading})
	return true, nil
}

// takeSlot takes a slot for the unloaded model name, as the most recently
// used, with no exit code: nil (and no error) when it is not unloaded,
// ErrLimit when every slot is taken.
func (f *Fleet) takeSlot(name string) (*Model, error) {
	m := f.find(name)
	if m == nil {
		return nil, errors.New("model " + name + " is not found")
	}
	if m.Status != Unloaded {
		return nil, nil
	}
	if !f.HasCapacity() {
		return nil, ErrLimit
	}
	f.clock++
	m.LastUsed, m.ExitCode, m.Stopping = f.clock, 0, false
	return m, nil
}

// Ready marks a loading model loaded (its child answers /health).
func (f *Fleet) Ready(name string) {
	if m := f.find(name); m != nil && m.Status == Loading && !m.Stopping {
		m.Status = Loaded
		f.record(Event{Kind: StatusChange, Model: m.Name, Status: Loaded})
	}
}

// Stop marks a running (or fetching) model stopping; false if it is
// neither.
func (f *Fleet) Stop(name string) bool {
	m := f.find(name)
	if m == nil || !m.HoldsSlot() {
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

// ErrExists is a download of a name the fleet already has.
var ErrExists = errors.New("model already exists")

// Download adds name as a model being downloaded into the cache
// (llama-server's load in download mode): listed as "downloading" from
// the cache, holding no slot. ErrExists if a model or alias is called
// name.
func (f *Fleet) Download(name string) error {
	if f.find(name) != nil {
		return ErrExists
	}
	f.models[name] = &Model{Spec: Spec{Name: name, Source: "cache"}, Status: Downloading}
	f.record(Event{Kind: ModelStatus, Model: name, Status: Downloading})
	return nil
}

// Progress records that name's download has done of total bytes of the
// file at url.
func (f *Fleet) Progress(name, url string, done, total int64) {
	m := f.models[name]
	if m == nil || m.Status != Downloading {
		return
	}
	p := maps.Clone(m.Progress)
	if p == nil {
		p = map[string]Transfer{}
	}
	p[url] = Transfer{Done: done, Total: total}
	m.Progress = p
	f.record(Event{Kind: DownloadProgress, Model: name, Progress: p})
}

// Downloaded ends name's download, ok or not: the model is "downloaded"
// until the next Sync drops it for what the cache then holds. A load's
// download ends with Fetched instead.
func (f *Fleet) Downloaded(name string, ok bool) {
	m := f.models[name]
	if m == nil || m.Status != Downloading || m.Fetching {
		return
	}
	m.Status = Downloaded
	kind := DownloadFinished
	if !ok {
		kind = DownloadFailed
	}
	f.record(Event{Kind: kind, Model: name})
}

// The refusals of Removable, as llama-server words them.
var (
	ErrNotFound     = errors.New("is not found")
	ErrNotRemovable = errors.New("is not removable (not from cache)")
)

// Removable checks that DELETE /models may remove name (its exact name,
// not an alias): a model of the cache. Before Forget, the caller cancels
// its download or stops its child.
func (f *Fleet) Removable(name string) (Model, error) {
	m, ok := f.models[name]
	switch {
	case !ok:
		return Model{}, ErrNotFound
	case m.Source != "cache":
		return Model{}, ErrNotRemovable
	}
	return *m, nil
}

// Forget drops name once it neither runs nor downloads and records
// ModelRemove; false while it still must wait. A name already gone (a
// reload dropped the ended download) is forgotten at once, as
// llama-server's remove does.
func (f *Fleet) Forget(name string) bool {
	if m, ok := f.models[name]; ok {
		if m.Status != Unloaded && m.Status != Downloaded {
			return false
		}
		delete(f.models, name)
	}
	f.record(Event{Kind: ModelRemove, Model: name})
	return true
}
