package engineclient

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// accountingClient is a Client with one engine (block size 4) and no
// sockets: enough for place, settle and report.
func accountingClient() *Client {
	c := &Client{streams: map[string]*Stream{}}
	c.slots = []*slot{{state: EngineState{Ready: true, Info: wire.Ready{BlockSize: 4}}}}
	return c
}

func (c *Client) placeNew(id string, promptTokens int) *Stream {
	s := &Stream{id: id, req: &wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: make([]int32, promptTokens)}, c: c}
	c.place(s, 0)
	return s
}

func (c *Client) finish(s *Stream) {
	delete(c.streams, s.id)
	c.settle(s)
}

// TestLoadAccounting: the requests a frontend sent count as pending on
// their engine until a report includes them, by the report's adds_seen —
// a report the engine built before an ADD arrived (the burst that all
// went to one engine) no longer clears it.
func TestLoadAccounting(t *testing.T) {
	seen := func(n int64) *int64 { return &n }
	c := accountingClient()
	e := &c.slots[0].state
	check := func(step string, pending, pendingBlocks, finished, finishedBlocks int) {
		t.Helper()
		if e.Pending != pending || e.PendingBlocks != pendingBlocks || e.Finished != finished || e.FinishedBlocks != finishedBlocks {
			t.Fatalf("%s: pending %d (%d blocks), finished %d (%d blocks); want %d (%d), %d (%d)", step,
				e.Pending, e.PendingBlocks, e.Finished, e.FinishedBlocks, pending, pendingBlocks, finished, finishedBlocks)
		}
	}
	a := c.placeNew("a", 8) // 2 blocks
	b := c.placeNew("b", 5) // 2 blocks
	d := c.placeNew("d", 1) // 1 block
	check("three sent", 3, 5, 0, 0)
	c.report(0, 0, 0, 0, seen(0))
	check("a report from before the ADDs", 3, 5, 0, 0)
	c.report(0, 0, 1, 2, seen(1))
	check("a report with the first", 2, 3, 0, 0)
	c.finish(a)
	check("the first finished", 2, 3, 1, 2)
	c.finish(b)
	check("the second finished before a report had it", 1, 1, 1, 2)
	c.report(0, 0, 1, 1, seen(3))
	check("a report with all three", 0, 0, 0, 0)
	c.finish(d)
	check("the third finished", 0, 0, 1, 1)
	c.report(0, 0, 0, 0, seen(99))
	check("a count past what was sent", 0, 0, 0, 0)

	f := c.placeNew("f", 4)
	c.report(0, 0, 0, 0, nil)
	check("an engine that does not count ADDs", 0, 0, 0, 0)
	c.finish(f)
	check("after it", 0, 0, 1, 1)

	c.placeNew("g", 4)
	c.placeNew("h", 4)
	c.slots[0].conn = nil
	c.hello(0)
	check("a HELLO: the engine counts anew", 0, 0, 1, 1)
	c.placeNew("i", 4)
	c.report(0, 0, 0, 0, seen(0))
	check("numbered from the HELLO", 1, 1, 0, 0)
	c.report(0, 0, 0, 0, seen(1))
	check("its first ADD", 0, 0, 0, 0)
}

// TestLoadAccountingProperty: over random sends, finishes and reports
// (each report including a prefix of the ADDs, the counts it gives never
// going down), Pending is exactly the unfinished requests no report
// included, and Finished those a report included that finished since the
// latest report.
func TestLoadAccountingProperty(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := accountingClient()
		e := &c.slots[0].state
		var live []*Stream
		seq := map[*Stream]int64{}
		finishedSince := map[*Stream]bool{}
		var sent, included int64
		for step := range 60 {
			switch r := rng.IntN(10); {
			case r < 4:
				sent++
				s := c.placeNew(fmt.Sprint(sent), 1+rng.IntN(12))
				seq[s] = sent
				live = append(live, s)
			case r < 7 && len(live) > 0:
				k := rng.IntN(len(live))
				s := live[k]
				live = append(live[:k], live[k+1:]...)
				if seq[s] <= included {
					finishedSince[s] = true
				}
				c.finish(s)
			default:
				included += rng.Int64N(sent - included + 1)
				n := included
				c.report(0, 0, 0, 0, &n)
				clear(finishedSince)
			}
			pending, pendingBlocks := 0, 0
			for _, s := range live {
				if seq[s] > included {
					pending++
					pendingBlocks += (len(s.req.PromptTokenIDs) + 3) / 4
				}
			}
			if e.Pending != pending || e.PendingBlocks != pendingBlocks || e.Finished != len(finishedSince) {
				t.Fatalf("seed %d step %d: pending %d (%d blocks), finished %d; want %d (%d), %d",
					seed, step, e.Pending, e.PendingBlocks, e.Finished, pending, pendingBlocks, len(finishedSince))
			}
		}
	}
}
