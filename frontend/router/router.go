package router

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// Policy names a routing policy (--routing).
type Policy string

// Policies.
const (
	Session     Policy = "session"      // exact session affinity, HRW with bounded load for new sessions; prefix without a session
	Prefix      Policy = "prefix"       // longest cached prefix from KV events, Dynamo-like cost
	LeastLoaded Policy = "least-loaded" // vLLM's 4·waiting + running
	RoundRobin  Policy = "round-robin"  // rotate over the healthy engines
)

// Policies lists every policy, default first.
var Policies = []Policy{Session, Prefix, LeastLoaded, RoundRobin}

// ParsePolicy checks a --routing value; "" is Session.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return Session, nil
	}
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w %q (want one of %v)", ErrUnknownPolicy, s, Policies)
}

// Decision outcomes, the label values of
// tandem:routing_decisions_total{policy,outcome}.
const (
	OutcomePinned       = "pinned"        // X-data-parallel-rank named the engine
	OutcomeSessionHit   = "session_hit"   // the engine that holds the session
	OutcomeSessionNew   = "session_new"   // a new session, at its first-ranked engine
	OutcomeSessionSpill = "session_spill" // a session sent past an engine over the load bound
	OutcomeSessionMoved = "session_moved" // the session's engine went away; placed anew
	OutcomePrefixHit    = "prefix_hit"    // the engine with the cheapest cost holds a prefix
	OutcomeLoad         = "load"          // chosen by load alone
	OutcomeRoundRobin   = "round_robin"   // the next engine in turn
)

// Errors.
var (
	ErrUnknownPolicy = errors.New("router: unknown routing policy")
	ErrNoEngine      = errors.New("router: no engine core is available")
	ErrRankMissing   = errors.New("router: the pinned data-parallel rank is not available")
)

// Config is a Router's settings.
type Config struct {
	Policy Policy // default Session
	// LoadFactor bounds placement: an engine takes a new (or spilled)
	// session only while its load ≤ LoadFactor × mean load + 1, else the
	// session goes to the next engine in its rendezvous order. Default 1.25.
	LoadFactor float64
	// SpillMinWaiting is the shortest waiting queue that counts a session's
	// holder as overloaded (SGLang's balance_abs_threshold): a shorter one
	// is a burst the next engine steps admit, and moving the session would
	// recompute its whole conversation. Default 32.
	SpillMinWaiting int
	// OverlapWeight weighs the uncached prefill blocks against the decode
	// blocks in the prefix cost (Dynamo's overlap_score_weight). Default 1.
	OverlapWeight float64
	// PredictTTL keeps the blocks of a routed request as "expected" on its
	// engine until the engine's own BlockStored arrives. Default 2 s.
	PredictTTL time.Duration
	// BindingTTL keeps this frontend's own session placements until the
	// engine's session report confirms them. Default 1 min.
	BindingTTL time.Duration
	// LostTTL remembers the sessions of an engine that went away, to label
	// their next request session_moved. Default 10 min.
	LostTTL time.Duration
	Now     func() time.Time // default time.Now
}

// Engine is what Route needs to know of one healthy engine core.
type Engine struct {
	ID            int    // the caller's stable handle (engineclient's slot index)
	Name          string // the name all frontends hash for rendezvous: its endpoint
	Rank          int    // its data-parallel rank (READY), for pinning
	BlockSize     int    // tokens per KV block (READY)
	Waiting       int    // requests waiting, latest report
	Running       int    // requests running, latest report
	UsedBlocks    int    // KV blocks held by live requests, latest report
	Pending       int    // requests this frontend sent it since that report
	PendingBlocks int    // their prompt blocks
}

// load is the request count bounded-load placement compares.
func (e *Engine) load() int { return e.Waiting + e.Running + e.Pending }

// reported is the engine's own load report, the same for every frontend.
func (e *Engine) reported() int { return e.Waiting + e.Running }

// Request is what Route needs to know of one request.
type Request struct {
	SessionID string
	TokenIDs  []int32 // the whole prompt: the conversation so far
	CacheSalt string
	Rank      *int // X-data-parallel-rank
}

// Decision is where a request goes and why.
type Decision struct {
	Engine       int    // Engine.ID
	Policy       Policy // the configured policy
	Outcome      string // one of the Outcome constants
	CachedTokens int    // prompt tokens expected to hit the engine's prefix cache
}

// Router places requests on engine cores. Safe for concurrent use.
type Router struct {
	cfg Config

	mu        sync.Mutex // mu guards the fields below
	engines   map[int]*engineState
	bindings  map[string]binding   // this frontend's placements, by session
	lost      map[string]time.Time // sessions of engines that went away → when
	rr        uint64               // round-robin counter
	lastSweep time.Time
}

type binding struct {
	engine int
	at     time.Time
}

// New returns a Router; the zero Config is the session policy with the
// default knobs.
func New(cfg Config) (*Router, error) {
	p, err := ParsePolicy(string(cfg.Policy))
	if err != nil {
		return nil, err
	}
	cfg.Policy = p
	if cfg.LoadFactor <= 0 {
		cfg.LoadFactor = 1.25
	}
	if cfg.SpillMinWaiting <= 0 {
		cfg.SpillMinWaiting = 32
	}
	if cfg.OverlapWeight <= 0 {
		cfg.OverlapWeight = 1
	}
	if cfg.PredictTTL <= 0 {
		cfg.PredictTTL = 2 * time.Second
	}
	if cfg.BindingTTL <= 0 {
		cfg.BindingTTL = time.Minute
	}
	if cfg.LostTTL <= 0 {
		cfg.LostTTL = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Router{
		cfg:      cfg,
		engines:  map[int]*engineState{},
		bindings: map[string]binding{},
		lost:     map[string]time.Time{},
	}, nil
}

// Policy is the configured policy.
func (r *Router) Policy() Policy { return r.cfg.Policy }

// Route chooses one of engines (the healthy ones) for req and records the
// choice (the session's binding, the prompt's blocks as expected there).
func (r *Router) Route(req Request, engines []Engine) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	r.sweep(now)
	d := Decision{Engine: -1, Policy: r.cfg.Policy}
	p := &plan{r: r, req: req, engines: engines, now: now}
	if req.Rank != nil {
		for i := range engines {
			if e := &engines[i]; e.Rank == *req.Rank && (d.Engine < 0 || e.ID < d.Engine) {
				d.Engine = e.ID
			}
		}
		if d.Engine < 0 {
			return d, fmt.Errorf("%w: rank %d", ErrRankMissing, *req.Rank)
		}
		d.Outcome = OutcomePinned
		p.record(&d)
		return d, nil
	}
	if len(engines) == 0 {
		return d, ErrNoEngine
	}
	switch {
	case r.cfg.Policy == RoundRobin:
		sorted := slices.SortedFunc(slices.Values(engines), func(a, b Engine) int { return cmp.Compare(a.ID, b.ID) })
		d.Engine, d.Outcome = sorted[r.rr%uint64(len(sorted))].ID, OutcomeRoundRobin
		r.rr++
	case r.cfg.Policy == LeastLoaded:
		d.Engine, d.Outcome = r.leastLoaded(engines), OutcomeLoad
	case r.cfg.Policy == Session && req.SessionID != "":
		d.Engine, d.Outcome = p.session()
	default:
		d.Engine, d.Outcome = p.prefix()
	}
	p.record(&d)
	return d, nil
}

// record remembers a decision: the session's binding, and the prompt's
// blocks as expected on the engine; it fills d.CachedTokens.
func (p *plan) record(d *Decision) {
	var e *Engine
	for i := range p.engines {
		if p.engines[i].ID == d.Engine {
			e = &p.engines[i]
		}
	}
	if e == nil {
		return
	}
	r := p.r
	if p.req.SessionID != "" {
		r.bindings[p.req.SessionID] = binding{engine: e.ID, at: p.now}
		delete(r.lost, p.req.SessionID)
	}
	if e.BlockSize <= 0 {
		return
	}
	hashes := p.blockHashes(e.BlockSize)
	st := r.state(e.ID)
	d.CachedTokens = st.matched(hashes, len(p.req.TokenIDs), e.BlockSize, p.now) * e.BlockSize
	exp := p.now.Add(r.cfg.PredictTTL)
	for _, h := range hashes {
		if _, ok := st.blocks[h]; !ok {
			st.predicted[h] = exp
		}
	}
}

// leastLoaded is vLLM's DP balancer: the lowest 4·waiting + running
// (counting this frontend's requests since the last report as running),
// ties broken by a rotating start.
func (r *Router) leastLoaded(engines []Engine) int {
	start := int(r.rr % uint64(len(engines)))
	r.rr++
	best, bestScore := -1, 0
	for k := range engines {
		e := &engines[(start+k)%len(engines)]
		score := 4*e.Waiting + e.Running + e.Pending
		if best < 0 || score < bestScore {
			best, bestScore = e.ID, score
		}
	}
	return best
}

// plan is one Route call's working state.
type plan struct {
	r       *Router
	req     Request
	engines []Engine
	now     time.Time
	hashes  map[int][]uint64 // block size → the prompt's block hashes
}

func (p *plan) blockHashes(blockSize int) []uint64 {
	if p.hashes == nil {
		p.hashes = map[int][]uint64{}
	}
	h, ok := p.hashes[blockSize]
	if !ok {
		h = wire.BlockHashes(nil, p.req.TokenIDs, blockSize, p.req.CacheSalt)
		p.hashes[blockSize] = h
	}
	return h
}

// matchedBlocks is the prompt's cached prefix on e, in blocks.
func (p *plan) matchedBlocks(e *Engine) int {
	st, ok := p.r.engines[e.ID]
	if !ok || e.BlockSize <= 0 {
		return 0
	}
	return st.matched(p.blockHashes(e.BlockSize), len(p.req.TokenIDs), e.BlockSize, p.now)
}

// session routes a request that carries a session id. A holder keeps
// the session unless its waiting queue alone exceeds the load bound: a
// busy engine, or a burst that waits one step, is cheaper than
// recomputing the conversation elsewhere.
func (p *plan) session() (int, string) {
	id := p.req.SessionID
	var holder *Engine
	holderMatch := -1 // computed only when a second holder shows up
	var holderSince time.Time
	for i := range p.engines {
		e := &p.engines[i]
		since, ok := p.r.holdSince(id, e.ID, p.now)
		if !ok {
			continue
		}
		if holder == nil {
			holder, holderSince = e, since
			continue
		}
		if holderMatch < 0 {
			holderMatch = p.matchedBlocks(holder)
		}
		if m := p.matchedBlocks(e); m > holderMatch || (m == holderMatch && since.After(holderSince)) {
			holder, holderMatch, holderSince = e, m, since
		}
	}
	bound := p.loadBound()
	if holder != nil {
		if holder.Waiting < p.r.cfg.SpillMinWaiting || float64(holder.Waiting) <= bound {
			return holder.ID, OutcomeSessionHit
		}
		// Overloaded: its queue alone is long and over the bound. Spill.
		for _, e := range p.hrwOrder(id) {
			if e.ID != holder.ID && float64(e.load()) <= bound {
				return e.ID, OutcomeSessionSpill
			}
		}
		return holder.ID, OutcomeSessionHit
	}
	outcome := OutcomeSessionNew
	if _, moved := p.r.lost[id]; moved {
		outcome = OutcomeSessionMoved
	}
	// A new session is placed on the engines' own reports only, not on
	// this frontend's pending requests, so that every frontend computes
	// the same placement even before the engine's session report arrives.
	newBound := p.reportedBound()
	for k, e := range p.hrwOrder(id) {
		if float64(e.reported()) <= newBound {
			if k > 0 && outcome == OutcomeSessionNew {
				outcome = OutcomeSessionSpill
			}
			return e.ID, outcome
		}
	}
	panic("router: no engine within the load bound") // unreachable: the least loaded is ≤ mean
}

// loadBound is LoadFactor × mean load + 1.
func (p *plan) loadBound() float64 {
	total := 0
	for i := range p.engines {
		total += p.engines[i].load()
	}
	return p.r.cfg.LoadFactor*float64(total)/float64(len(p.engines)) + 1
}

// reportedBound is loadBound over the engines' reports alone.
func (p *plan) reportedBound() float64 {
	total := 0
	for i := range p.engines {
		total += p.engines[i].reported()
	}
	return p.r.cfg.LoadFactor*float64(total)/float64(len(p.engines)) + 1
}

// hrwOrder ranks the engines for key, best first.
func (p *plan) hrwOrder(key string) []*Engine {
	type scored struct {
		e     *Engine
		score uint64
	}
	s := make([]scored, len(p.engines))
	for i := range p.engines {
		s[i] = scored{&p.engines[i], hrwScore(key, p.engines[i].Name)}
	}
	slices.SortFunc(s, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.e.ID, b.e.ID)
	})
	out := make([]*Engine, len(s))
	for i := range s {
		out[i] = s[i].e
	}
	return out
}

// prefix routes by Dynamo's cost: OverlapWeight × the prompt blocks the
// engine would have to prefill + the blocks its running requests hold
// (and those this frontend sent it since its last report). Ties go to
// the engine first in the rendezvous order of the prompt's first block,
// so requests sharing a prefix agree across frontends.
func (p *plan) prefix() (int, string) {
	tieKey := p.req.SessionID
	best, bestMatch := -1, 0
	var bestCost float64
	var order []*Engine
	if len(p.req.TokenIDs) > 0 && p.engines[0].BlockSize > 0 {
		if h := p.blockHashes(p.engines[0].BlockSize); len(h) > 0 {
			tieKey = fmt.Sprintf("%016x", h[0])
		}
	}
	order = p.hrwOrder(tieKey)
	for _, e := range order {
		bs := max(e.BlockSize, 1)
		need := (len(p.req.TokenIDs) + bs - 1) / bs
		m := p.matchedBlocks(e)
		cost := p.r.cfg.OverlapWeight*float64(need-m) + float64(e.UsedBlocks+e.PendingBlocks)
		if best < 0 || cost < bestCost {
			best, bestCost, bestMatch = e.ID, cost, m
		}
	}
	if bestMatch > 0 {
		return best, OutcomePrefixHit
	}
	return best, OutcomeLoad
}
