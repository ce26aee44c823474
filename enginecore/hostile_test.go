package enginecore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// Hostile peers written with raw ZeroMQ (not engineclient): issue #14's
// red-team cases against a real engine core.

// rawPeer is a DEALER speaking the wire protocol by hand.
type rawPeer struct {
	t    *testing.T
	conn *zmq.Conn
}

func dialRaw(t *testing.T, ep string, opts ...zmq.Option) *rawPeer {
	t.Helper()
	c, err := zmq.DialDealer(ep, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawPeer{t: t, conn: c}
}

func (p *rawPeer) send(typ wire.MsgType, payload any) {
	p.t.Helper()
	frames, err := wire.Encode(typ, payload)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.conn.Send(frames); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next message other than a heartbeat, or nil after d.
func (p *rawPeer) next(d time.Duration) any {
	p.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case frames, ok := <-p.conn.Recv():
			if !ok {
				return nil
			}
			_, v, err := wire.Decode(frames)
			if err != nil {
				p.t.Fatalf("engine sent a malformed message: %v", err)
			}
			if _, hb := v.(*wire.Heartbeat); hb {
				continue
			}
			return v
		case <-deadline:
			return nil
		}
	}
}

func (p *rawPeer) hello(name string) {
	p.t.Helper()
	p.send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: name})
	if r, ok := p.next(5 * time.Second).(*wire.Ready); !ok || r.Error != "" {
		p.t.Fatalf("no READY for %s: %+v", name, r)
	}
}

func (p *rawPeer) utility(method string) *wire.UtilityResult {
	p.t.Helper()
	p.send(wire.MsgUtility, &wire.Utility{CallID: 7, Method: method})
	for {
		v := p.next(5 * time.Second)
		if v == nil {
			p.t.Fatalf("no answer to %s", method)
		}
		if r, ok := v.(*wire.UtilityResult); ok {
			return r
		}
	}
}

// longRequest starts a 150-token greedy generation through a real
// frontend client and returns its generation.
func longRequest(t *testing.T, c *engineclient.Client, id string) *engineclient.Generation {
	t.Helper()
	g, err := c.Generate(context.Background(), []int32{5, 6, 7, 8}, greedy(150), id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestForeignAbortIsIgnored: ABORTs of a request from a peer that skipped
// HELLO, and from another frontend that completed it, leave the request
// running to its end (before, any identity could abort any request and
// the victim's stream stopped without an end).
func TestForeignAbortIsIgnored(t *testing.T) {
	ep := startEngine(t, 256)
	victim := dial(t, ep)
	g := longRequest(t, victim, "victim-req")

	rogue := dialRaw(t, ep)
	rogue.send(wire.MsgAbort, &wire.Abort{RequestIDs: []string{"victim-req"}}) // no HELLO
	other := dialRaw(t, ep)
	other.hello("other-frontend")
	other.send(wire.MsgAbort, &wire.Abort{RequestIDs: []string{"victim-req"}})

	toks, reason := drain(t, g)
	if reason != wire.FinishLength || len(toks) != 150 {
		t.Fatalf("victim: %d tokens, finish %v; want 150, length", len(toks), reason)
	}
	// Its own ABORT still works.
	g2 := longRequest(t, victim, "victim-req-2")
	g2.Close()
	waitIdle(t, victim, 5*time.Second)
}

// TestUtilitiesNeedHelloAndHideOthers: UTILITY without HELLO is refused;
// list_requests shows only the caller's requests and no identities.
func TestUtilitiesNeedHelloAndHideOthers(t *testing.T) {
	ep := startEngine(t, 256)
	victim := dial(t, ep)
	g := longRequest(t, victim, "secret-request-id")
	defer g.Close()

	rogue := dialRaw(t, ep)
	if r := rogue.utility("list_requests"); r.FailureMessage == "" || !strings.Contains(r.FailureMessage, "HELLO") {
		t.Fatalf("list_requests without HELLO: %+v", r)
	}
	rogue.hello("rogue")
	r := rogue.utility("list_requests")
	if r.FailureMessage != "" {
		t.Fatal(r.FailureMessage)
	}
	reqs := requestList(t, r.Result)
	if len(reqs) != 0 {
		t.Fatalf("another frontend's requests listed: %v", reqs)
	}
	// The owner sees its own, without any identity.
	raw, err := victim.Call(context.Background(), 0, "list_requests")
	if err != nil {
		t.Fatal(err)
	}
	mine := requestList(t, raw)
	if len(mine) != 1 || mine[0]["request_id"] != "secret-request-id" || mine[0]["client"] != nil {
		t.Fatalf("owner's list_requests: %v", mine)
	}
}

// requestList decodes list_requests' result.
func requestList(t *testing.T, raw wire.Raw) []map[string]any {
	t.Helper()
	var v any
	if err := wire.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	list, _ := v.([]any)
	out := make([]map[string]any, len(list))
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("list_requests entry %T", x)
		}
		out[i] = m
	}
	return out
}

// TestIdentityCannotBeTakenOver: a second DEALER presenting a connected
// frontend's ZMQ identity gets nothing, and the frontend keeps its
// outputs (before, ROUTER_HANDOVER gave the route to the newcomer).
func TestIdentityCannotBeTakenOver(t *testing.T) {
	ep := startEngine(t, 256)
	victim := dialRaw(t, ep, zmq.WithIdentity("frontend-identity"))
	victim.hello("victim")
	sp := greedy(150)
	victim.send(wire.MsgAdd, &wire.EngineCoreRequest{RequestID: "v1", PromptTokenIDs: []int32{5, 6, 7, 8}, SamplingParams: sp})
	if _, ok := victim.next(5 * time.Second).(*wire.EngineCoreOutputs); !ok {
		t.Fatal("victim got no first output")
	}
	thief := dialRaw(t, ep, zmq.WithIdentity("frontend-identity"))
	thief.send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "thief"})

	got := 0
	for got < 150 {
		v := victim.next(5 * time.Second)
		if v == nil {
			t.Fatalf("victim's outputs stopped after %d tokens", got)
		}
		if o, ok := v.(*wire.EngineCoreOutputs); ok {
			for _, out := range o.Outputs {
				got += len(out.NewTokenIDs)
				if out.FinishReason != wire.FinishNone {
					got = 150
				}
			}
		}
	}
	if v := thief.next(300 * time.Millisecond); v != nil {
		t.Fatalf("the thief received %T", v)
	}
}
