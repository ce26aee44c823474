package enginecore

import (
	"sync"
	"time"
)

// clients tracks the frontends connected to this engine: written by the
// input goroutine (liveness) and the core goroutine (handshakes, expiry),
// read by the output goroutine (heartbeats).
type clients struct {
	mu   sync.Mutex // mu guards the fields below
	byID map[string]*client
}

type client struct {
	id       string    // ZMQ identity of the frontend's DEALER
	name     string    // FrontendID from its HELLO
	lastSeen time.Time // last message of any kind
	ready    bool      // HELLO accepted
}

func newClients() *clients { return &clients{byID: map[string]*client{}} }

// seen records a message from id and reports whether id completed HELLO.
func (cs *clients) seen(id string, now time.Time) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.byID[id]
	if !ok {
		c = &client{id: id}
		cs.byID[id] = c
	}
	c.lastSeen = now
	return c.ready
}

// accept marks id as having completed the handshake. It reports whether
// the client is new (not ready before): a frontend that dialled an engine
// before the engine bound its socket has several HELLOs queued, and each is
// answered, but it connected once.
func (cs *clients) accept(id, name string, now time.Time) (fresh bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.byID[id]
	if !ok {
		c = &client{id: id}
		cs.byID[id] = c
	}
	fresh = !c.ready || c.name != name
	c.name, c.ready, c.lastSeen = name, true, now
	return fresh
}

// expire forgets the clients silent since before deadline and returns them.
func (cs *clients) expire(deadline time.Time) []*client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var gone []*client
	for id, c := range cs.byID {
		if c.lastSeen.Before(deadline) {
			gone = append(gone, c)
			delete(cs.byID, id)
		}
	}
	return gone
}

// ready returns the identities of the clients that completed HELLO.
func (cs *clients) readyIDs() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ids := make([]string, 0, len(cs.byID))
	for id, c := range cs.byID {
		if c.ready {
			ids = append(ids, id)
		}
	}
	return ids
}
