package benchclient

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one benchmark run.
type Config struct {
	Label   string // names the run in reports (e.g. the routing policy)
	Target  *Target
	Dataset DatasetConfig
	// Endpoint of single-shot datasets: "completions" (default, like
	// vllm bench serve) or "chat". Multi-turn always uses chat.
	Endpoint string
	// NumClients is the concurrency: requests in flight at most (single
	// shot), or clients each running conversations (multi-turn).
	NumClients int
	// RequestRate is the Poisson arrival rate in requests/s: of the whole
	// run for single-shot datasets, of each client for multi-turn (the
	// think time between turns). 0 sends as fast as possible.
	RequestRate float64
	// MaxActive is how many conversations each multi-turn client
	// interleaves, a turn of each in turn (vLLM's round_robin
	// conversation sampling). Default 1.
	MaxActive int
	// BlockSize rounds cacheable tokens down to whole KV blocks; default 16.
	BlockSize int
	// NoSessionID stops sending X-Session-ID (multi-turn sends one per
	// conversation by default).
	NoSessionID bool
	Progress    io.Writer // progress bar; nil for none
}

// Run is a finished run: every sample and their summary.
type Run struct {
	Label    string   `json:"label"`
	Summary  Summary  `json:"summary"`
	Samples  []Sample `json:"samples"`
	Duration float64  `json:"duration_s"`
}

// Execute runs the benchmark.
func Execute(ctx context.Context, cfg Config) (*Run, error) {
	if cfg.NumClients <= 0 {
		cfg.NumClients = 1
	}
	if cfg.MaxActive <= 0 {
		cfg.MaxActive = 1
	}
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = 16
	}
	if err := cfg.Target.ResolveModel(ctx); err != nil {
		return nil, err
	}
	var samples []Sample
	var err error
	start := time.Now()
	if cfg.Dataset.Name == DatasetMultiTurn {
		samples, err = runConversations(ctx, cfg, start)
	} else {
		samples, err = runPrompts(ctx, cfg, start)
	}
	if err != nil {
		return nil, err
	}
	dur := time.Since(start).Seconds()
	return &Run{Label: cfg.Label, Samples: samples, Duration: dur, Summary: Summarize(cfg.Label, cfg.Dataset.Name, samples, dur)}, nil
}

// progress draws a bar on w until stop: redrawn in place on a terminal,
// a line per tenth of the run otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	shown int // tenths printed (not a terminal)
	total int
	done  atomic.Int64
	fail  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now(), stop: make(chan struct{})}
	if w == nil {
		return p
	}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			p.tty = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				p.shown = -1 // always print the final state
				p.draw(label)
				if p.tty {
					fmt.Fprintln(p.w)
				}
				return
			case <-t.C:
				p.draw(label)
			}
		}
	}()
	return p
}

func (p *progress) draw(label string) {
	const width = 30
	done := int(p.done.Load())
	filled := width * done / max(p.total, 1)
	line := fmt.Sprintf("%-14s [%s%s] %d/%d requests, %d failed, %.0fs", label,
		strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, p.total, p.fail.Load(), time.Since(p.start).Seconds())
	if p.tty {
		fmt.Fprint(p.w, "\r"+line+" ")
		return
	}
	if tenth := 10 * done / max(p.total, 1); p.shown < 0 || tenth > p.shown {
		p.shown = max(tenth, p.shown)
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) add(s Sample) {
	p.done.Add(1)
	if s.Error != "" {
		p.fail.Add(1)
	}
}

func (p *progress) finish() {
	close(p.stop)
	p.wg.Wait()
}

// runPrompts sends a single-shot dataset with Poisson arrivals and at most
// NumClients requests in flight.
func runPrompts(ctx context.Context, cfg Config, start time.Time) ([]Sample, error) {
	prompts, err := cfg.Dataset.Prompts()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Dataset.Seed, 1))
	p := startProgress(cfg.Progress, cfg.Label, len(prompts))
	defer p.finish()
	samples := make([]Sample, len(prompts))
	sem := make(chan struct{}, cfg.NumClients)
	var wg sync.WaitGroup
	next := time.Now()
	for i, pr := range prompts {
		if cfg.RequestRate > 0 {
			next = next.Add(time.Duration(rng.ExpFloat64() / cfg.RequestRate * float64(time.Second)))
			if err := sleepUntil(ctx, next); err != nil {
				break
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Since(start).Seconds()
			var s Sample
			if cfg.Endpoint == "chat" {
				s = cfg.Target.Chat(ctx, []Message{{Role: "user", Content: pr.Text}}, pr.MaxTokens, "")
			} else {
				s = cfg.Target.Complete(ctx, pr.Text, pr.MaxTokens, "")
			}
			s.Start = t0
			samples[i] = s
			p.add(s)
		}()
	}
	wg.Wait()
	return samples, ctx.Err()
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// convState is one conversation in progress.
type convState struct {
	index    int
	conv     Conversation
	history  []Message
	turn     int // turns done
	prevSeen int // tokens of the previous turn's prompt + answer
}

// runConversations runs the multi-turn dataset: NumClients clients, each
// interleaving up to MaxActive conversations, every turn carrying the
// server's real answers forward.
func runConversations(ctx context.Context, cfg Config, start time.Time) ([]Sample, error) {
	convs, err := cfg.Dataset.Conversations()
	if err != nil {
		return nil, err
	}
	total := 0
	for _, c := range convs {
		total += len(c.UserTurns)
	}
	p := startProgress(cfg.Progress, cfg.Label, total)
	defer p.finish()
	queue := make(chan int, len(convs))
	for i := range convs {
		queue <- i
	}
	close(queue)
	var mu sync.Mutex
	var samples []Sample
	var wg sync.WaitGroup
	for client := range cfg.NumClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Dataset.Seed, uint64(client)+2))
			var active []*convState
			for {
				for len(active) < cfg.MaxActive {
					i, ok := <-queue
					if !ok {
						break
					}
					c := convs[i]
					active = append(active, &convState{index: i, conv: c, history: []Message{{Role: "system", Content: c.System}}})
				}
				if len(active) == 0 || ctx.Err() != nil {
					return
				}
				cs := active[0]
				active = active[1:]
				if cfg.RequestRate > 0 {
					if sleepUntil(ctx, time.Now().Add(time.Duration(rng.ExpFloat64()/cfg.RequestRate*float64(time.Second)))) != nil {
						return
					}
				}
				s := turn(ctx, cfg, cs, start)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
				p.add(s)
				if s.Error != "" {
					// The history cannot go on without the answer: the
					// conversation's remaining turns are not run.
					for range len(cs.conv.UserTurns) - cs.turn {
						p.done.Add(1)
					}
					continue
				}
				if cs.turn < len(cs.conv.UserTurns) {
					active = append(active, cs)
				}
			}
		}()
	}
	wg.Wait()
	return samples, ctx.Err()
}

// turn sends the next turn of cs and appends the exchange to its history.
func turn(ctx context.Context, cfg Config, cs *convState, start time.Time) Sample {
	cs.history = append(cs.history, Message{Role: "user", Content: cs.conv.UserTurns[cs.turn]})
	session := cs.conv.ID
	if cfg.NoSessionID {
		session = ""
	}
	t0 := time.Since(start).Seconds()
	s := cfg.Target.Chat(ctx, cs.history, cs.conv.MaxTokens, session)
	s.Start, s.Conversation, s.Turn = t0, cs.index, cs.turn+1
	if cs.turn > 0 && s.PromptTokens > 0 {
		bs := cfg.BlockSize
		s.Cacheable = min(cs.prevSeen, s.PromptTokens-1) / bs * bs
	}
	cs.turn++
	cs.prevSeen = s.PromptTokens + s.Completion
	cs.history = append(cs.history, Message{Role: "assistant", Content: s.Text})
	return s
}
