package engineclient

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/tandem-llm/tandem/wire"
)

// Parallel sampling, as vLLM's ParentRequest does it: a request with
// SamplingParams.N = n > 1 is n engine requests (children) that share its
// prompt, session, cache salt, priority and pinned rank, named
// "<i>_<parent id>", each with N = 1 and, when the request is seeded,
// seed + i (so the samples differ and each is reproducible). The HTTP
// server and Go callers build them with the same Children.

// ChildID is the engine request id of child i of n of parent.
func ChildID(parent string, i, n int) string {
	if n <= 1 {
		return parent
	}
	return fmt.Sprintf("%d_%s", i, parent)
}

// Children returns the engine requests of parent's parallel samples
// (parent itself, with N = 1, when it asks for one). parent is not
// changed.
func Children(parent *wire.EngineCoreRequest) []*wire.EngineCoreRequest {
	n := max(parent.SamplingParams.N, 1)
	out := make([]*wire.EngineCoreRequest, n)
	for i := range n {
		c := *parent
		c.RequestID = ChildID(parent.RequestID, i, n)
		c.SamplingParams.N = 1
		if s := parent.SamplingParams.Seed; s != nil && n > 1 {
			seed := *s + int64(i)
			c.SamplingParams.Seed = &seed
		}
		out[i] = &c
	}
	return out
}

// Generation is one request's n samples in flight: Children[i] is sample
// i's stream. Read them one by one, or all merged with Next; Close stops
// every one that has not finished.
type Generation struct {
	ID       string // the parent request id
	Children []*Stream

	once   sync.Once
	merged chan Output
	stop   chan struct{}
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error  // the first child's failure
	ended  []bool // samples ended early by Stop; guarded by errMu
}

// Output is one output of sample Index.
type Output struct {
	Index int
	wire.EngineCoreOutput
}

// SubmitN sends parent's children (Children) and returns them as one
// Generation. If one cannot be sent, the others are aborted.
func (c *Client) SubmitN(ctx context.Context, parent *wire.EngineCoreRequest) (*Generation, error) {
	kids := Children(parent)
	g := &Generation{ID: parent.RequestID, ended: make([]bool, len(kids))}
	for _, req := range kids {
		st, err := c.Submit(ctx, req)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.Children = append(g.Children, st)
	}
	return g, nil
}

// Next returns the next output of any sample, in the order they arrive;
// io.EOF once every sample finished, or the first sample's failure (the
// others are then closed).
func (g *Generation) Next(ctx context.Context) (Output, error) {
	g.once.Do(g.startMerge)
	if g.merged == nil { // closed before the first Next
		return Output{}, io.EOF
	}
	if err := ctx.Err(); err != nil { // before select, which picks at random among ready cases
		g.Close()
		return Output{}, err
	}
	select {
	case o, ok := <-g.merged:
		if !ok {
			g.errMu.Lock()
			defer g.errMu.Unlock()
			if g.err != nil {
				return Output{}, g.err
			}
			return Output{}, io.EOF
		}
		return o, nil
	case <-ctx.Done():
		g.Close()
		return Output{}, ctx.Err()
	}
}

// startMerge forwards every child's outputs into merged, one goroutine per
// child (a Stream is read by one goroutine at a time).
func (g *Generation) startMerge() {
	g.merged = make(chan Output)
	g.stop = make(chan struct{})
	for i, st := range g.Children {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-g.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			for {
				o, err := st.Next(ctx)
				if err == io.EOF || g.isEnded(i) {
					return
				}
				if err != nil {
					g.errMu.Lock()
					if g.err == nil && ctx.Err() == nil {
						g.err = fmt.Errorf("engineclient: sample %d of %s: %w", i, g.ID, err)
					}
					g.errMu.Unlock()
					g.Close()
					return
				}
				select {
				case g.merged <- Output{Index: i, EngineCoreOutput: o}:
				case <-g.stop:
					return
				}
			}
		}()
	}
	go func() { g.wg.Wait(); close(g.merged) }()
}

// Stop ends sample i early (a stop string matched it): it is aborted in
// its engine, and Next returns none of its later outputs and does not
// count its end as a failure. The other samples go on.
func (g *Generation) Stop(i int) {
	g.errMu.Lock()
	g.ended[i] = true
	g.errMu.Unlock()
	g.Children[i].Close()
}

func (g *Generation) isEnded(i int) bool {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.ended[i]
}

// Close stops every sample that has not finished (aborting it in its
// engine).
func (g *Generation) Close() {
	g.once.Do(func() {}) // no merge after Close
	g.errMu.Lock()
	if g.stop != nil {
		select {
		case <-g.stop:
		default:
			close(g.stop)
		}
	}
	g.errMu.Unlock()
	for _, st := range g.Children {
		st.Close()
	}
}

// Best returns the n candidates with the highest score, best first, ties
// in their original order: best_of's choice among parallel samples (by
// mean logprob per token), shared by the HTTP server and frontend/llm.
func Best[T any](cands []T, n int, score func(*T) float64) []T {
	out := slices.Clone(cands)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(score(&b), score(&a)) })
	return out[:min(n, len(out))]
}
