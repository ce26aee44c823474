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
// Engine.Publish builds the payloads (the Engine owns the KV cache and the
// session records); the shell numbers them per topic and sends them.

const sessionSnapshotEvery = time.Second

// eventState is the publisher's bookkeeping.
type eventState struct {
	held         map[string]bool // sessions last published as held
	added        []string        // sessions held since the last delta
	lastSnapshot time.Time
}

func newEventState() *eventState { return &eventState{held: map[string]bool{}} }

// noteSession records that a request of session id arrived.
func (e *Engine) noteSession(id string) {
	if id == "" || !e.publishing || e.ev.held[id] {
		return
	}
	e.ev.held[id] = true
	e.ev.added = append(e.ev.added, id)
}

// Publish drains the KV cache's events and the session deltas into PUB
// payloads, with a session snapshot when one is due. Before PublishTo the
// events are drained and dropped.
func (e *Engine) Publish(now time.Time) []Pub {
	e.clock = now
	kvEvents := e.kv.DrainEvents()
	if !e.publishing {
		e.ev.added = e.ev.added[:0]
		return nil
	}
	var out []Pub
	ts := unixSeconds(now)
	if len(kvEvents) > 0 {
		batch := &wire.KVEventBatch{Timestamp: ts, DPRank: e.cfg.EngineIndex, Events: make([]wire.KVEvent, 0, len(kvEvents))}
		for _, ev := range kvEvents {
			batch.Events = append(batch.Events, kvEvent(ev))
		}
		out = e.appendPub(out, wire.TopicKV, batch)
	}
	if len(e.ev.added) > 0 {
		out = e.appendPub(out, wire.TopicSessions, &wire.SessionReport{EngineIndex: e.cfg.EngineIndex, Timestamp: ts, Added: slices.Clone(e.ev.added)})
		e.ev.added = e.ev.added[:0]
	}
	if now.Sub(e.ev.lastSnapshot) >= sessionSnapshotEvery {
		e.ev.lastSnapshot = now
		for id := range e.ev.held {
			if !e.holdsSession(id) {
				delete(e.ev.held, id)
			}
		}
		ids := slices.Sorted(maps.Keys(e.ev.held))
		out = e.appendPub(out, wire.TopicSessions, &wire.SessionReport{EngineIndex: e.cfg.EngineIndex, Timestamp: ts, Full: true, Added: ids})
	}
	return out
}

// heldSessions lists the sessions held now, sorted (never nil, so it
// encodes as an empty array).
func (e *Engine) heldSessions() []string {
	ids := []string{}
	for id := range e.ev.held {
		if e.holdsSession(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// holdsSession reports whether session id still has a live request or
// resident KV blocks here.
func (e *Engine) holdsSession(id string) bool {
	if info, ok := e.sessions.get(id); ok && info.NumRunning > 0 {
		return true
	}
	_, ok := e.kv.Session(id)
	return ok
}

func (e *Engine) appendPub(out []Pub, topic string, v any) []Pub {
	b, err := wire.Marshal(v)
	if err != nil {
		e.log.Error("encode PUB payload", "topic", topic, "err", err)
		return out
	}
	return append(out, Pub{Topic: topic, Payload: b})
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
