package fleet

// Plan is what a request for a model that is not loaded does first.
type Plan struct {
	Ready  bool   // loaded: proxy now
	Load   bool   // a slot is free and nobody waits: load it now
	Queued bool   // joined the queue
	Evict  string // stop this idle model to free a slot for the queue
}

// Want plans a request for name (llama-server's ensure_model_ready).
func (f *Fleet) Want(name string) Plan {
	m := f.find(name)
	if m == nil {
		return Plan{}
	}
	if m.Status == Loaded {
		return Plan{Ready: true}
	}
	if m.Status != Unloaded {
		return Plan{} // loading or fetching: wait for it (a POST /models download: Step proceeds)
	}
	if f.HasCapacity() && len(f.queue) == 0 {
		return Plan{Load: true}
	}
	// also queue when a slot looks free but others wait already, else they starve
	f.join(m.Name)
	p := Plan{Queued: true}
	if !f.HasCapacity() {
		if p.Evict = f.Victim(m.Name); p.Evict != "" {
			if e := f.entry(m.Name); e != nil {
				e.slotPending = true
			}
			f.models[p.Evict].Stopping = true // nobody else picks it meanwhile
		}
	}
	return p
}

// Waiter is one request's progress while it waits for its model.
type Waiter struct {
	Queued     bool // holds a share of a queue entry
	DidLoad    bool // started the load itself
	SawLoading bool // saw the model loading
}

// Verdict is the next step of a waiting request.
type Verdict int

// The verdicts of Step.
const (
	Wait      Verdict = iota // wait for the next change
	Proceed                  // proxy (the model is loaded, or will not be)
	Claim                    // load the model now: its turn, and a slot is free
	Failed                   // the model's child failed to load
	Cancelled                // the request was stopped while it waited
)

// Step decides what a request waiting for name does now; stopped is
// whether its client or a stream stop gave up. After Proceed, Failed and
// Cancelled the caller calls Leave.
func (f *Fleet) Step(name string, w *Waiter, stopped bool) Verdict {
	m := f.find(name)
	if m == nil {
		return Proceed // removed from the catalog
	}
	switch {
	case m.Status == Loaded || m.Status == Downloaded || m.Status == Downloading && !m.Fetching:
		return Proceed // a download is no load to wait for: the proxy says it is not running
	case m.Status == Loading || m.Fetching:
		w.SawLoading = true
	case m.Status == Unloaded:
		if w.DidLoad || w.SawLoading {
			if m.Failed() {
				return Failed
			}
			return Proceed // stopped by someone else: the proxy says it is not running
		}
		if !w.Queued {
			return Proceed
		}
	}
	if stopped {
		return Cancelled
	}
	if m.Status == Unloaded && f.claim(m.Name) {
		return Claim
	}
	return Wait
}

// Claimed reports how the load after Claim went: when it started, the
// entry is gone (its other waiters watch the model's status); when not,
// the entry stays at the head for another try.
func (f *Fleet) Claimed(name string, w *Waiter, ok bool) {
	for i := range f.queue {
		if f.queue[i].model == name {
			if ok {
				f.queue = append(f.queue[:i], f.queue[i+1:]...)
			} else {
				f.queue[i].loading = false
			}
			break
		}
	}
	if ok {
		w.Queued, w.DidLoad = false, true
	}
}

// Leave gives up the waiter's share of its queue entry, if it holds one.
func (f *Fleet) Leave(name string, w *Waiter) {
	if !w.Queued {
		return
	}
	w.Queued = false
	for i := range f.queue {
		if f.queue[i].model == name {
			if f.queue[i].waiters--; f.queue[i].waiters <= 0 {
				f.queue = append(f.queue[:i], f.queue[i+1:]...)
			}
			return
		}
	}
}

// Queue returns the models waited for, in order.
func (f *Fleet) Queue() []string {
	out := make([]string, len(f.queue))
	for i, e := range f.queue {
		out[i] = e.model
	}
	return out
}

// join adds a waiter for model: requests for one model share an entry.
func (f *Fleet) join(model string) {
	if e := f.entry(model); e != nil {
		e.waiters++
		return
	}
	f.queue = append(f.queue, entry{model: model, waiters: 1})
}

func (f *Fleet) entry(model string) *entry {
	for i := range f.queue {
		if f.queue[i].model == model {
			return &f.queue[i]
		}
	}
	return nil
}

// claim is true when model heads the queue, nobody loads it yet and a
// slot is free; it marks the entry loading.
func (f *Fleet) claim(model string) bool {
	if len(f.queue) == 0 || f.queue[0].model != model || f.queue[0].loading || !f.HasCapacity() {
		return false
	}
	f.queue[0].loading = true
	return true
}
