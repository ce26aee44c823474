package zmq_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// TestPushPull: two PUSH peers (vLLM engines' output sockets) dialled
// before the PULL (the frontend's) binds; every message arrives whole, in
// order per sender, with no identity frame; PULL cannot send.
func TestPushPull(t *testing.T) {
	ep := ipcEndpoint(t, "pull")
	var pushes []*zmq.Conn
	for range 2 {
		p, err := zmq.DialPush(ep)
		if err != nil {
			t.Fatal(err)
		}
		pushes = append(pushes, closeOnCleanup(t, p))
	}
	for i, p := range pushes {
		for j := range 3 {
			send(t, p, string(rune('a'+i)), string(rune('0'+j)))
		}
	}
	pull, err := zmq.BindPull(ep)
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, pull)
	got := map[string][]string{}
	for range 6 {
		m := recv(t, pull)
		if len(m) != 2 {
			t.Fatalf("message %q: want 2 frames (no identity)", m)
		}
		got[m[0]] = append(got[m[0]], m[1])
	}
	want := map[string][]string{"a": {"0", "1", "2"}, "b": {"0", "1", "2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PULL received (-want +got):\n%s", diff)
	}
	if err := pull.Send(toFrames("x")); err == nil {
		t.Error("PULL.Send succeeded")
	}
}
