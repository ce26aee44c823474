package enginecore

import "testing"

// TestAcceptReportsNewClientsOnce: HELLOs a frontend queued before the
// engine bound are all answered, but only the first is a new connection;
// a new FrontendID on the same identity (a restarted frontend) is new
// again, and so is a client dropped for silence.
func TestAcceptReportsNewClientsOnce(t *testing.T) {
	cs := newClients()
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
		if got := cs.accept(s.id, s.name); got != s.want {
			t.Errorf("step %d: accept(%s, %s) = %v, want %v", i, s.id, s.name, got, s.want)
		}
	}
	if name, ok := cs.drop("a"); !ok || name != "fe-1b" {
		t.Errorf("drop(a) = %q, %v", name, ok)
	}
	if cs.ready("a") || !cs.ready("b") {
		t.Errorf("ready after drop: a %v, b %v", cs.ready("a"), cs.ready("b"))
	}
	if !cs.accept("a", "fe-1b") {
		t.Error("a client dropped for silence is new when it says HELLO again")
	}
}
