package sched

import (
	"cmp"
	"slices"
)

// Fairness between flows. A flow is what one client asked for at once:
// the Tandem frontend gives every HTTP request its own flow (all of its
// prompts × n sequences), scoped by frontend; requests that name no flow
// share their frontend's one. Within a flow the scheduler is vLLM's
// (admission order, then priority and arrival); between flows it shares:
//
//   - the step's token budget: while F flows have work, each flow may use
//     ⌈budget/F⌉ tokens before any flow gets more (pass 1), and what is
//     left goes to whoever can use it (pass 3), so no work is wasted;
//   - admission: of the waiting requests of the best priority, the one
//     whose flow runs the fewest requests goes first, then the one whose
//     flow was admitted to least recently (round robin), then arrival;
//   - slots and KV blocks: when a waiting request cannot be admitted, the
//     flow running the most requests gives up its newest one (preempted by
//     recompute) while it runs at least two more than the waiting
//     request's flow, so a newcomer runs within one step however many
//     sequences another client holds. Requests of better priority are
//     never preempted for a worse one.
//   - under KV pressure the victim is the request of the worst priority,
//     then of the flow running the most, then the newest.
//
// With one flow all of this is the plain rule.

// planned is one request's share of a step.
type planned struct {
	r *Request
	n int // tokens to compute
}

// step is the bookkeeping of one Schedule call.
type step struct {
	s      *Scheduler
	budget int            // tokens left
	quota  int            // tokens per flow in pass 1
	counts map[string]int // running requests per flow
	items  []planned      // scheduled so far
	served map[*Request]int

	kvPreempted, fairPreempted int
}

func (s *Scheduler) newStep(budget int) *step {
	st := &step{s: s, budget: budget, quota: budget, counts: map[string]int{}, served: map[*Request]int{}}
	for _, r := range s.running {
		st.counts[r.Flow]++
	}
	flows := len(st.counts)
	if len(s.waiting) > 0 {
		if c := s.waiting[s.nextWaiting(st.counts)]; st.counts[c.Flow] == 0 {
			flows++ // a newcomer: keep it a share
		}
	}
	if flows > 1 {
		st.quota = (budget + flows - 1) / flows
	}
	return st
}

// quotaPlan is pass 1's plan: running requests grouped by flow (flows
// served longest ago first, then in the order of their first running
// request; requests in admission order), each flow up to the quota.
func (st *step) quotaPlan() []planned {
	s := st.s
	var flows []string
	byFlow := map[string][]*Request{}
	for _, r := range s.running {
		if _, ok := byFlow[r.Flow]; !ok {
			flows = append(flows, r.Flow)
		}
		byFlow[r.Flow] = append(byFlow[r.Flow], r)
	}
	// Flows served longest ago go first, so that when the budget is
	// smaller than the flows (a paced step on a CPU), the ones left out of
	// this step lead the next.
	slices.SortStableFunc(flows, func(a, b string) int {
		return cmp.Compare(s.flows[a].lastServed, s.flows[b].lastServed)
	})
	var plan []planned
	left := st.budget
	for _, f := range flows {
		quota := st.quota
		for _, r := range byFlow[f] {
			n := min(s.numNew(r), quota, left)
			if n <= 0 {
				continue
			}
			plan = append(plan, planned{r, n})
			quota -= n
			left -= n
		}
	}
	return plan
}

// take schedules n tokens of r.
func (st *step) take(r *Request, n int) {
	st.served[r] = len(st.items)
	st.items = append(st.items, planned{r, n})
	st.budget -= n
}

// drop unschedules r if it was scheduled, returning its tokens.
func (st *step) drop(r *Request) {
	i, ok := st.served[r]
	if !ok {
		return
	}
	st.budget += st.items[i].n
	st.items = append(st.items[:i], st.items[i+1:]...)
	delete(st.served, r)
	for j := i; j < len(st.items); j++ {
		st.served[st.items[j].r] = j
	}
}

// spend is pass 3: the budget the quotas left goes to the scheduled
// requests that want more, then to running ones the quotas skipped, in
// order. It preempts nothing: a request whose blocks do not fit keeps what
// it has.
func (st *step) spend(s *Scheduler) {
	for i := range st.items {
		if st.budget <= 0 {
			return
		}
		it := &st.items[i]
		extra := min(s.numNew(it.r)-it.n, st.budget)
		if extra > 0 && s.kv.Allocate(it.r.ID, it.r.numComputedTokens+it.n+extra) {
			it.n += extra
			st.budget -= extra
		}
	}
	for _, r := range s.running {
		if st.budget <= 0 {
			return
		}
		if _, ok := st.served[r]; ok {
			continue
		}
		if n := min(s.numNew(r), st.budget); n > 0 && s.kv.Allocate(r.ID, r.numComputedTokens+n) {
			st.take(r, n)
		}
	}
}

// nextWaiting is the index in waiting of the request to admit next: of
// those with the best priority, the one whose flow runs the fewest
// requests, then whose flow was admitted to least recently (a flow that
// has never been admitted first), then the earliest.
func (s *Scheduler) nextWaiting(counts map[string]int) int {
	best := 0
	bw := s.waiting[0]
	for i := 1; i < len(s.waiting) && s.waiting[i].Priority == bw.Priority; i++ {
		w := s.waiting[i]
		if cw, cb := counts[w.Flow], counts[bw.Flow]; cw < cb || cw == cb && s.flows[w.Flow].lastAdmit < s.flows[bw.Flow].lastAdmit {
			best, bw = i, w
		}
	}
	return best
}

// flowState is what the scheduler keeps of a flow while it has requests.
type flowState struct {
	live       int    // unfinished requests
	lastAdmit  uint64 // admissions counter at its latest admission; 0 = none yet
	lastServed int64  // the last step that computed tokens of it; 0 = none yet
}

func (s *Scheduler) flowAdded(r *Request) {
	f := s.flows[r.Flow]
	if f == nil {
		f = &flowState{}
		s.flows[r.Flow] = f
	}
	f.live++
}

func (s *Scheduler) flowFinished(r *Request) {
	if f := s.flows[r.Flow]; f != nil {
		if f.live--; f.live <= 0 {
			delete(s.flows, r.Flow)
		}
	}
}

func (s *Scheduler) flowAdmitted(r *Request) {
	s.numAdmissions++
	s.flows[r.Flow].lastAdmit = s.numAdmissions
}

// pickVictim chooses whom to preempt for KV blocks: among the running
// requests not yet scheduled this step, the worst priority, then the flow
// running the most, then the newest.
func (s *Scheduler) pickVictim(st *step) *Request {
	var v *Request
	worse := func(a, b *Request) bool { // a is a better victim than b
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if ca, cb := st.counts[a.Flow], st.counts[b.Flow]; ca != cb {
			return ca > cb
		}
		return a.seq > b.seq
	}
	for _, r := range s.running {
		if _, ok := st.served[r]; ok {
			continue
		}
		if v == nil || worse(r, v) {
			v = r
		}
	}
	return v
}

// fairVictim is whom the waiting request c may preempt: the newest
// request of the flow that runs the most requests of c's priority or
// worse, if that flow runs at least two more than c's. Nil when there is
// none.
func (s *Scheduler) fairVictim(st *step, c *Request) *Request {
	var victim *Request
	for _, r := range s.running {
		if r.Priority < c.Priority {
			continue
		}
		if victim == nil || st.counts[r.Flow] >= st.counts[victim.Flow] {
			victim = r
		}
	}
	if victim == nil || st.counts[victim.Flow] <= st.counts[c.Flow]+1 {
		return nil
	}
	return victim
}

// preemptForFairness makes room for the waiting request c by preempting
// its fairVictim. It reports whether there was one.
func (s *Scheduler) preemptForFairness(st *step, c *Request) bool {
	victim := s.fairVictim(st, c)
	if victim == nil {
		return false
	}
	st.drop(victim)
	s.preempt(victim)
	st.counts[victim.Flow]--
	st.fairPreempted++
	return true
}
