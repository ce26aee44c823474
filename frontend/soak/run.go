package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is one soak run.
type Config struct {
	BaseURL string // the frontend, e.g. http://127.0.0.1:8000
	APIKey  string // sent as a bearer token when set
	Model   string // "" = the first model of GET /v1/models

	NumClients int           // concurrent clients, each running requests back to back; default 100
	Duration   time.Duration // clients start new requests until then; default 30 s
	MaxTokens  int           // max_tokens is uniform in 1..MaxTokens (cancelled streams ask for 8×); default 32
	Mix        Mix           // request kinds; zero = DefaultMix
	Seed       uint64        // request contents derive from it

	// RequestTimeout bounds each request, queueing included; one still open then is a
	// hang (ClassTimeout). Default 2 min.
	RequestTimeout time.Duration
	// RootPID, if set, is the server's top process: it and its descendants are sampled
	// for RSS every SampleEvery (default 1 s) and are where faults are injected.
	RootPID     int
	SampleEvery time.Duration
	// KillEngineEvery, if set, SIGKILLs one engine process (found under RootPID, named
	// engine-N) at this period, except during the last quarter of Duration; the
	// supervisor (tandem serve) must restart it.
	KillEngineEvery time.Duration
	// IdleWithin is how long the server may take, after the last request, to return to
	// idle with goroutines at the baseline plus GoroutineSlack; defaults 30 s and 10.
	IdleWithin     time.Duration
	GoroutineSlack int
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
}

// Mix weighs the request kinds.
type Mix struct {
	Stream    int // streaming completion
	Session   int // streaming chat turn of a multi-turn conversation with a session id
	Cancel    int // streaming completion the client hangs up on after a few events
	NonStream int // non-streaming completion
	Bad       int // a malformed or invalid request that must get a 4xx
}

// DefaultMix is the mix when Config.Mix is zero.
var DefaultMix = Mix{Stream: 40, Session: 25, Cancel: 15, NonStream: 10, Bad: 10}

func (c *Config) defaults() {
	if c.NumClients <= 0 {
		c.NumClients = 100
	}
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 32
	}
	if c.Mix == (Mix{}) {
		c.Mix = DefaultMix
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 2 * time.Minute
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = time.Second
	}
	if c.IdleWithin <= 0 {
		c.IdleWithin = 30 * time.Second
	}
	if c.GoroutineSlack <= 0 {
		c.GoroutineSlack = 10
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
}

// Run drives the server for cfg.Duration, waits for every request to end, checks that
// the server returns to idle, and reports. It fails only when the server cannot be
// reached before the load starts; everything after that is in the Report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	hc := &http.Client{Transport: &http.Transport{
		MaxIdleConns: cfg.NumClients, MaxIdleConnsPerHost: cfg.NumClients, IdleConnTimeout: 30 * time.Second,
	}}
	defer hc.CloseIdleConnections()
	if cfg.Model == "" {
		m, err := firstModel(ctx, hc, cfg.BaseURL, cfg.APIKey)
		if err != nil {
			return nil, err
		}
		cfg.Model = m
	}
	// Warm up once, then take the baseline with no connection of ours open.
	w0 := newWorker(&cfg, hc, 0)
	if r := w0.do(ctx, w0.streamCompletion(4)); r.class != ClassOK {
		return nil, fmt.Errorf("soak: warm-up request: %s: %s", r.class, r.detail)
	}
	hc.CloseIdleConnections()
	baseline, ok := WaitIdle(ctx, hc, cfg.BaseURL, cfg.APIKey, 1<<30, 10*time.Second)
	if !ok {
		return nil, fmt.Errorf("soak: server not idle before the load: %s", baseline)
	}

	rep := &Report{Config: cfg, Started: time.Now(), Baseline: baseline, ByClass: map[Class]int{},
		ByKind: map[Kind]map[Class]int{}, Examples: map[Class]string{}}
	runCtx, stopSampling := context.WithCancel(ctx)
	var bg sync.WaitGroup
	if cfg.RootPID != 0 {
		mem := newMemorySampler(cfg.RootPID)
		bg.Go(func() { mem.run(runCtx, cfg.SampleEvery); rep.Memory = mem.result() })
		if cfg.KillEngineEvery > 0 {
			bg.Go(func() { rep.Faults = injectFaults(runCtx, &cfg, rep.Started) })
		}
	}
	deadline := rep.Started.Add(cfg.Duration)
	results := make([][]result, cfg.NumClients) // [client][request]
	var wg sync.WaitGroup
	for i := range cfg.NumClients {
		wg.Go(func() {
			w := newWorker(&cfg, hc, uint64(i)+1)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r := w.next(ctx)
				results[i] = append(results[i], r)
				if r.class == ClassOverload429 || r.class == ClassUnavailable503 {
					w.backoff(ctx) // the documented answer says: retry later
				}
			}
		})
	}
	progress := time.NewTicker(10 * time.Second)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-progress.C:
			if s, err := Scrape(ctx, hc, cfg.BaseURL, cfg.APIKey); err == nil {
				cfg.Logf("soak: %s elapsed, server %s", time.Since(rep.Started).Round(time.Second), s)
			}
		}
	}
	progress.Stop()
	rep.Elapsed = time.Since(rep.Started)
	stopSampling()
	bg.Wait()

	for _, rs := range results {
		for _, r := range rs {
			rep.add(r)
		}
	}
	hc.CloseIdleConnections()
	rep.After, rep.Idle = WaitIdle(ctx, hc, cfg.BaseURL, cfg.APIKey, baseline.Goroutines+cfg.GoroutineSlack, cfg.IdleWithin)
	rep.finish()
	return rep, nil
}

func firstModel(ctx context.Context, hc *http.Client, baseURL, apiKey string) (string, error) {
	body, err := get(ctx, hc, baseURL+"/v1/models", apiKey)
	if err != nil {
		return "", err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("soak: GET /v1/models: no model in %q", body)
	}
	return list.Data[0].ID, nil
}

// memorySampler samples the RSS of a process tree.
type memorySampler struct {
	root int
	mu   sync.Mutex // guards byPID
	// byPID holds each process seen, by PID: a restarted engine is a new entry.
	byPID map[int]*Memory
}

func newMemorySampler(root int) *memorySampler {
	return &memorySampler{root: root, byPID: map[int]*Memory{}}
}

func (m *memorySampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.sample()
		select {
		case <-ctx.Done():
			m.sample()
			return
		case <-t.C:
		}
	}
}

func (m *memorySampler) sample() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ProcessTree(m.root) {
		rss, err := RSS(p.PID)
		if err != nil {
			continue
		}
		e := m.byPID[p.PID]
		if e == nil {
			e = &Memory{Name: p.Name, PID: p.PID, StartRSS: rss}
			m.byPID[p.PID] = e
		}
		e.EndRSS, e.PeakRSS = rss, max(e.PeakRSS, rss)
		e.NumSamples++
	}
}

func (m *memorySampler) result() []Memory {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Memory
	for _, e := range m.byPID {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Memory) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return a.PID - b.PID
	})
	return out
}

// injectFaults SIGKILLs one engine every cfg.KillEngineEvery, round robin over the
// engines it finds, until the last quarter of the run.
func injectFaults(ctx context.Context, cfg *Config, started time.Time) []Fault {
	var faults []Fault
	t := time.NewTicker(cfg.KillEngineEvery)
	defer t.Stop()
	stopAt := started.Add(cfg.Duration * 3 / 4)
	var n int
	for {
		select {
		case <-ctx.Done():
			return faults
		case now := <-t.C:
			if now.After(stopAt) {
				return faults
			}
			var engines []Proc
			for _, p := range ProcessTree(cfg.RootPID) {
				if strings.HasPrefix(p.Name, "engine") {
					engines = append(engines, p)
				}
			}
			if len(engines) == 0 {
				continue
			}
			// By name: the process tree lists a restarted engine after the others.
			slices.SortFunc(engines, func(a, b Proc) int { return strings.Compare(a.Name, b.Name) })
			victim := engines[n%len(engines)]
			n++
			if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
				continue
			}
			f := Fault{At: now.Sub(started), What: fmt.Sprintf("SIGKILL %s (pid %d)", victim.Name, victim.PID)}
			cfg.Logf("soak: fault at %s: %s", f.At.Round(time.Millisecond), f.What)
			faults = append(faults, f)
		}
	}
}

// worker is one client: its own random source and conversation.
type worker struct {
	cfg  *Config
	hc   *http.Client
	rng  *rand.Rand
	id   uint64
	conv conversation
}

func newWorker(cfg *Config, hc *http.Client, id uint64) *worker {
	return &worker{cfg: cfg, hc: hc, id: id, rng: rand.New(rand.NewPCG(cfg.Seed, id))}
}

// backoff waits a little, jittered, before the next request after an overload answer.
func (w *worker) backoff(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(200+w.rng.IntN(800)) * time.Millisecond):
	}
}
