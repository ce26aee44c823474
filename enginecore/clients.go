package enginecore

import "slices"

// clients are the frontends that completed HELLO: ZMQ identity → the
// FrontendID they gave. The Engine's; liveness is the shell's (liveness).
// adds counts the ADDs from each identity since its latest HELLO (also
// those refused, and from identities without HELLO): the figures the
// Engine reports to a frontend say how many of its ADDs they include
// (SchedulerStats.AddsSeen), so the frontend knows which of its requests
// in flight are not counted yet.
type clients struct {
	byID map[string]string
	adds map[string]int64
	// snap is allAdds' last copy, valid while fresh (nothing counted
	// since): a flood of other messages copies nothing.
	snap  map[string]int64
	fresh bool
}

func newClients() *clients { return &clients{byID: map[string]string{}, adds: map[string]int64{}} }

// accept marks id as having completed the handshake. It reports whether
// the client is new (not ready before): a frontend that dialled an engine
// before the engine bound its socket has several HELLOs queued, and each is
// answered, but it connected once.
func (cs *clients) accept(id, name string) (fresh bool) {
	prev, ok := cs.byID[id]
	cs.byID[id] = name
	cs.fresh = false
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
	delete(cs.adds, id)
	cs.fresh = false
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

// hello restarts id's count of ADDs: the frontend counts from its HELLO.
func (cs *clients) hello(id string) { cs.adds[id], cs.fresh = 0, false }

// added counts one ADD from id.
func (cs *clients) added(id string) { cs.adds[id], cs.fresh = cs.adds[id]+1, false }

// addsSeen is the ADDs from id since its latest HELLO.
func (cs *clients) addsSeen(id string) int64 { return cs.adds[id] }

// allAdds is every ready client's count, for the shell's heartbeats: a
// copy the caller must not modify, made anew only when a count changed.
func (cs *clients) allAdds() map[string]int64 {
	if cs.fresh {
		return cs.snap
	}
	m := make(map[string]int64, len(cs.byID))
	for id := range cs.byID {
		m[id] = cs.adds[id]
	}
	cs.snap, cs.fresh = m, true
	return m
}
