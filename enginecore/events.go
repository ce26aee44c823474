package enginecore

import (
	"maps"
	"slices"
	"time"

	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/wire"
)

// What the engine publishes (docs/wire.md §10):
//
//   - KV events: the prefix cache's BlockStored/BlockRemoved/AllBlocksCleared
//     events of each step, one vLLM KVEventBatch per step, for the KV-events
//     PUB socket (the only thing on it);
//   - session reports: the sessions it holds, as deltas when a session
//     arrives and as a full snapshot every sessionSnapshotEvery (which also
//     carries the removals: sessions whose requests and blocks are gone),
//     for every frontend, in a HEARTBEAT.
//
// Engine.Publish builds them (the Engine owns the KV cache and the session
// records); the shell numbers, encodes and sends them (proc.go, kvlog.go).

// KVEventsConfig is the part of --kv-events-config the shell uses.
type KVEventsConfig struct {
	Topic       string        // first frame of every KV-events message ("" = vLLM's default)
	Layout      wire.KVLayout // how the events are encoded
	BufferSteps int           // batches kept for the replay socket; default 10000 (vLLM's buffer_steps)
	QueueSize   int           // batches waiting for the output goroutine; default 4096 (vLLM's max_queue_size)
}

// Pub is what Publish hands the shell: exactly one field is set.
type Pub struct {
	KV       *wire.KVEventBatch  // for the KV-events PUB socket; the shell numbers and encodes it
	Sessions *wire.SessionReport // for every frontend, in a HEARTBEAT
}

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

// Publish drains the KV cache's events and the session deltas, with a
// session snapshot when one is due. Before PublishTo the events are
// drained and dropped; KV events are dropped unless PublishTo had kv.
func (e *Engine) Publish(now time.Time) []Pub {
	e.clock = now
	kvEvents := e.kv.DrainEvents()
	if !e.publishing {
		e.ev.added = e.ev.added[:0]
		return nil
	}
	var out []Pub
	ts := unixSeconds(now)
	if len(kvEvents) > 0 && e.kvPub {
		batch := &wire.KVEventBatch{Timestamp: ts, DPRank: e.cfg.EngineIndex, Layout: e.cfg.KVEvents.Layout, Events: make([]wire.KVEvent, 0, len(kvEvents))}
		for _, ev := range kvEvents {
			batch.Events = append(batch.Events, kvEvent(ev))
		}
		out = append(out, Pub{KV: batch})
	}
	if len(e.ev.added) > 0 {
		out = append(out, Pub{Sessions: &wire.SessionReport{EngineIndex: e.cfg.EngineIndex, Timestamp: ts, Added: slices.Clone(e.ev.added)}})
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
		out = append(out, Pub{Sessions: &wire.SessionReport{EngineIndex: e.cfg.EngineIndex, Timestamp: ts, Full: true, Added: ids}})
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
	return e.kv.HasSession(id) // not Session: that counts its cached tokens, O(live blocks)
}

// kvEvent converts one KV-cache event to its wire form. Every block lives
// in the engine's own pool, vLLM's MEDIUM_GPU, whatever the device.
func kvEvent(e kvcache.Event) wire.KVEvent {
	switch e := e.(type) {
	case kvcache.BlockStored:
		return &wire.BlockStored{BlockHashes: e.Hashes, ParentHash: e.ParentHash, HasParent: e.HasParent, TokenIDs: e.TokenIDs,
			BlockSize: e.BlockSize, Medium: wire.MediumGPU, LoraName: e.LoRAName, LoraID: e.LoRAID, SessionID: e.SessionID}
	case kvcache.BlockRemoved:
		return &wire.BlockRemoved{BlockHashes: e.Hashes, Medium: wire.MediumGPU}
	}
	return &wire.AllBlocksCleared{}
}

// eventAdapter is the adapter a LoRA request's KV events name: vLLM's
// lora_name and lora_id for the one adapter it applies; for several
// (llama-server's), their names joined by "+" and no id. An adapter at
// scale 0 changes nothing and is left out, as wire.LoRASalt leaves it.
func eventAdapter(loras []wire.LoRARequest) kvcache.Adapter {
	var a kvcache.Adapter
	n := 0
	for _, l := range loras {
		if l.Scale == 0 {
			continue
		}
		if n > 0 {
			a.Name += "+"
		}
		a.Name += l.Name
		a.ID = l.ID
		n++
	}
	if n > 1 {
		a.ID = 0
	}
	return a
}
