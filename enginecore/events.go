package enginecore

import (
	"maps"
	"slices"
	"time"

	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/wire"
)

// What the engine publishes on its PUB socket besides load reports
// (docs/wire.md §10):
//
//   - TopicKV: the prefix cache's BlockStored/BlockRemoved/AllBlocksCleared
//     events of each step, in vLLM's KVEventBatch format;
//   - TopicSessions: the sessions it holds, as deltas when a session
//     arrives and as a full snapshot every sessionSnapshotEvery (which also
//     carries the removals: sessions whose requests and blocks are gone).
//
// The core goroutine builds the payloads (it owns the KV cache and the
// session records) and hands them to the output goroutine, the only one
// that touches the PUB socket, which numbers them per topic.

const (
	defaultReportInterval = 100 * time.Millisecond
	sessionSnapshotEvery  = time.Second
	pubQueueLen           = 4096 // payloads waiting for the output goroutine
)

// pubMsg is one PUB payload waiting to be numbered and sent.
type pubMsg struct {
	topic   string
	payload []byte // msgpack
}

// eventState is the publisher's bookkeeping. Core goroutine only.
type eventState struct {
	held         map[string]bool // sessions last published as held
	added        []string        // sessions held since the last delta
	lastSnapshot time.Time
	dropped      int64 // payloads dropped because the output queue was full
}

func newEventState() *eventState { return &eventState{held: map[string]bool{}} }

// noteSession records that a request of session id arrived. Core goroutine.
func (c *Core) noteSession(id string) {
	if id == "" || !c.hasPub || c.ev.held[id] {
		return
	}
	c.ev.held[id] = true
	c.ev.added = append(c.ev.added, id)
}

// publishEvents drains the KV cache's events and the session deltas into
// PUB payloads, and builds a session snapshot when one is due. With no PUB
// socket the events are drained and dropped. Core goroutine.
func (c *Core) publishEvents(t time.Time) {
	kvEvents := c.kv.DrainEvents()
	if !c.hasPub {
		c.ev.added = c.ev.added[:0]
		return
	}
	ts := float64(t.UnixNano()) / 1e9
	if len(kvEvents) > 0 {
		batch := &wire.KVEventBatch{Timestamp: ts, DPRank: c.cfg.EngineIndex, Events: make([]wire.KVEvent, 0, len(kvEvents))}
		for _, e := range kvEvents {
			batch.Events = append(batch.Events, kvEvent(e))
		}
		c.queuePub(wire.TopicKV, batch)
	}
	if len(c.ev.added) > 0 {
		c.queuePub(wire.TopicSessions, &wire.SessionReport{EngineIndex: c.cfg.EngineIndex, Timestamp: ts, Added: slices.Clone(c.ev.added)})
		c.ev.added = c.ev.added[:0]
	}
	if t.Sub(c.ev.lastSnapshot) >= sessionSnapshotEvery {
		c.ev.lastSnapshot = t
		for id := range c.ev.held {
			if !c.holdsSession(id) {
				delete(c.ev.held, id)
			}
		}
		ids := slices.Sorted(maps.Keys(c.ev.held))
		c.queuePub(wire.TopicSessions, &wire.SessionReport{EngineIndex: c.cfg.EngineIndex, Timestamp: ts, Full: true, Added: ids})
	}
}

// heldSessions lists the sessions held now, sorted (never nil, so it
// encodes as an empty array). Core goroutine.
func (c *Core) heldSessions() []string {
	ids := []string{}
	for id := range c.ev.held {
		if c.holdsSession(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// holdsSession reports whether session id still has a live request or
// resident KV blocks here.
func (c *Core) holdsSession(id string) bool {
	if info, ok := c.sessions.get(id); ok && info.NumRunning > 0 {
		return true
	}
	_, ok := c.kv.Session(id)
	return ok
}

func (c *Core) queuePub(topic string, v any) {
	b, err := wire.Marshal(v)
	if err != nil {
		c.log.Error("encode PUB payload", "topic", topic, "err", err)
		return
	}
	select {
	case c.pubc <- pubMsg{topic: topic, payload: b}:
	default:
		c.ev.dropped++
		if c.ev.dropped&(c.ev.dropped-1) == 0 { // log at 1, 2, 4, 8, …
			c.log.Warn("PUB queue full; dropping events (subscribers will see a sequence gap)", "dropped", c.ev.dropped)
		}
	}
}

// kvEvent converts one KV-cache event to its wire form.
func kvEvent(e kvcache.Event) wire.KVEvent {
	switch e := e.(type) {
	case kvcache.BlockStored:
		return &wire.BlockStored{BlockHashes: e.Hashes, ParentHash: e.ParentHash, HasParent: e.HasParent, TokenIDs: e.TokenIDs, BlockSize: e.BlockSize}
	case kvcache.BlockRemoved:
		return &wire.BlockRemoved{BlockHashes: e.Hashes}
	}
	return &wire.AllBlocksCleared{}
}

// pubSender numbers and sends PUB payloads. Output goroutine only.
type pubSender struct {
	pub  Publisher
	seqs map[string]uint64 // topic → next sequence number
}

func (p *pubSender) send(m pubMsg) {
	if p.pub == nil {
		return
	}
	seq := p.seqs[m.topic]
	p.seqs[m.topic] = seq + 1
	_ = p.pub.Send(wire.PubFrames(m.topic, seq, m.payload))
}

func (c *Core) reportInterval() time.Duration {
	if c.cfg.ReportInterval > 0 {
		return c.cfg.ReportInterval
	}
	return defaultReportInterval
}

// eventsEndpoint is the PUB endpoint frontends should subscribe to, for
// the "get_events_endpoint" utility ("" when the engine has none).
func eventsEndpoint(pub Publisher) string {
	if e, ok := pub.(interface{ Endpoint() string }); ok {
		return e.Endpoint()
	}
	return ""
}
