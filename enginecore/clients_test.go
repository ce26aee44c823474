package enginecore

import (
	"testing"
	"time"
)

// TestAcceptReportsNewClientsOnce: HELLOs a frontend queued before the
// engine bound are all answered, but only the first is a new connection;
// a new identity name (a restarted frontend reusing the routing id) is new
// again.
func TestAcceptReportsNewClientsOnce(t *testing.T) {
	cs := newClients()
	now := time.Unix(100, 0)
	steps := []struct {
		id, name string
		want     bool
	}{
		{"a", "fe-1", true},
		{"a", "fe-1", false},
		{"a", "fe-1", false},
		{"b", "fe-2", true},
		{"a", "fe-1b", true},
	}
	for i, s := range steps {
		if got := cs.accept(s.id, s.name, now); got != s.want {
			t.Errorf("step %d: accept(%s, %s) = %v, want %v", i, s.id, s.name, got, s.want)
		}
	}
	cs.expire(now.Add(time.Second))
	if !cs.accept("a", "fe-1b", now) {
		t.Error("a client forgotten after its heartbeats stopped is new when it says HELLO again")
	}
}
