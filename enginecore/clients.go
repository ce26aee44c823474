package enginecore

import "slices"

// clients are the frontends that completed HELLO: ZMQ identity → the
// FrontendID they gave. The Engine's; liveness is the shell's (liveness).
type clients struct {
	byID map[string]string
}

func newClients() *clients { return &clients{byID: map[string]string{}} }

// accept marks id as having completed the handshake. It reports whether
// the client is new (not ready before): a frontend that dialled an engine
// before the engine bound its socket has several HELLOs queued, and each is
// answered, but it connected once.
func (cs *clients) accept(id, name string) (fresh bool) {
	prev, ok := cs.byID[id]
	cs.byID[id] = name
	return !ok || prev != name
}

// ready reports whether id completed HELLO.
func (cs *clients) ready(id string) bool {
	_, ok := cs.byID[id]
	return ok
}

// drop forgets id, returning its name and whether it was ready.
func (cs *clients) drop(id string) (string, bool) {
	name, ok := cs.byID[id]
	delete(cs.byID, id)
	return name, ok
}

// readyIDs returns the identities of the clients that completed HELLO, sorted.
func (cs *clients) readyIDs() []string {
	ids := make([]string, 0, len(cs.byID))
	for id := range cs.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
