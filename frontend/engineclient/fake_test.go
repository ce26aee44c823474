package engineclient_test

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	hbInterval = 40 * time.Millisecond
	hbTimeout  = time.Second // generous: a loaded CI machine must not see false deaths
)

// fakeEngine speaks the engine side of the protocol: READY to HELLO,
// heartbeats, its PUB endpoint to get_events_endpoint, and whatever
// onAdd does with requests (by default: one finished output).
type fakeEngine struct {
	t        *testing.T
	rank     int
	id       string
	router   *zmq.Conn
	pub      *zmq.Conn
	endpoint string

	mu      sync.Mutex // mu guards the fields below
	clients map[string]bool
	shunned map[string]bool // identities it no longer answers (a lost route)
	strict  bool            // answer an ADD before HELLO "unknown frontend", as the engine does
	listed  map[string]bool // request ids list_requests answers with (requests it "runs")
	onAdd   func(f *fakeEngine, client string, req *wire.EngineCoreRequest)
	adds    []string         // request ids received
	counted map[string]int64 // ADDs from each client since its HELLO (adds_seen)
	seq     map[string]uint64
	load    wire.LoadReport // last published; heartbeats carry its counts
	dead    bool

	stop chan struct{}
	done chan struct{}
}

// startStrictFake is startFake for an engine that refuses an ADD from a
// frontend without HELLO, as a restarted engine core does.
func startStrictFake(t *testing.T, rank int, endpoint string) *fakeEngine {
	f := startFake(t, rank, endpoint)
	f.mu.Lock()
	f.strict = true
	f.mu.Unlock()
	return f
}

// startFake binds a fake engine on endpoint ("" = a fresh ipc endpoint).
func startFake(t *testing.T, rank int, endpoint string) *fakeEngine {
	t.Helper()
	if endpoint == "" {
		endpoint = "ipc://" + filepath.Join(t.TempDir(), fmt.Sprintf("engine-%d.sock", rank))
	}
	r, err := zmq.BindRouter(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := zmq.BindPub("ipc://" + filepath.Join(t.TempDir(), fmt.Sprintf("events-%d.sock", rank)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{
		t: t, rank: rank, id: fmt.Sprintf("fake-%d-%d", rank, time.Now().UnixNano()), router: r, pub: p, endpoint: endpoint,
		clients: map[string]bool{}, shunned: map[string]bool{}, listed: map[string]bool{}, seq: map[string]uint64{}, counted: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{}),
	}
	go f.run()
	t.Cleanup(f.kill)
	return f
}

func (f *fakeEngine) setOnAdd(fn func(f *fakeEngine, client string, req *wire.EngineCoreRequest)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onAdd = fn
}

func (f *fakeEngine) requestIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.adds...)
}

// shunClients stops answering every frontend connected so far, as an
// engine whose route to them is lost: no heartbeats, no replies.
func (f *fakeEngine) shunClients() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.clients {
		f.shunned[id] = true
		delete(f.clients, id)
	}
}

// numClients is the number of frontend identities it answers.
func (f *fakeEngine) numClients() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.clients)
}

// numShunned is the number of identities it stopped answering.
func (f *fakeEngine) numShunned() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.shunned)
}

// kill stops the engine without a word, like a SIGKILL.
func (f *fakeEngine) kill() {
	f.mu.Lock()
	if f.dead {
		f.mu.Unlock()
		return
	}
	f.dead = true
	f.mu.Unlock()
	close(f.stop)
	<-f.done
	f.router.Close()
	f.pub.Close()
}

func (f *fakeEngine) send(client string, t wire.MsgType, payload any) {
	frames, err := wire.Encode(t, payload)
	if err != nil {
		f.t.Errorf("fake engine: encode: %v", err)
		return
	}
	_ = f.router.Send(append([][]byte{[]byte(client)}, frames...))
}

// publish sends one PUB message under topic.
func (f *fakeEngine) publish(topic string, v any) {
	b, err := wire.Marshal(v)
	if err != nil {
		f.t.Errorf("fake engine: marshal: %v", err)
		return
	}
	f.mu.Lock()
	if l, ok := v.(*wire.LoadReport); ok {
		f.load = *l
	}
	seq := f.seq[topic]
	f.seq[topic]++
	f.mu.Unlock()
	_ = f.pub.Send(wire.PubFrames(topic, seq, b))
}

// output sends one output of req to client.
// heartbeatSessions sends every client a heartbeat carrying rep, as an
// engine does when its sessions change.
func (f *fakeEngine) heartbeatSessions(rep *wire.SessionReport) {
	f.mu.Lock()
	var ids []string
	for id := range f.clients {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	for _, id := range ids {
		f.send(id, wire.MsgHeartbeat, &wire.Heartbeat{Timestamp: 1, Sessions: rep})
	}
}

func (f *fakeEngine) output(client string, o wire.EngineCoreOutput) {
	var finished []string
	if o.FinishReason != wire.FinishNone {
		finished = []string{o.RequestID}
	}
	f.send(client, wire.MsgOutputs, &wire.EngineCoreOutputs{EngineIndex: f.rank, Outputs: []wire.EngineCoreOutput{o}, FinishedRequests: finished})
}

func (f *fakeEngine) run() {
	defer close(f.done)
	tick := time.NewTicker(hbInterval)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
			f.mu.Lock()
			hbs := map[string]*wire.Heartbeat{}
			for id := range f.clients { // as the engine: each client's own adds_seen
				seen := f.counted[id]
				hbs[id] = &wire.Heartbeat{Timestamp: 1, NumRunning: f.load.NumRunning, NumWaiting: f.load.NumWaiting,
					SchedulerStats: &wire.SchedulerStats{NumRunningReqs: f.load.NumRunning, NumWaitingReqs: f.load.NumWaiting, AddsSeen: &seen}}
			}
			load := f.load
			f.mu.Unlock()
			for id, hb := range hbs {
				f.send(id, wire.MsgHeartbeat, hb)
			}
			f.publish(wire.TopicLoad, &load)
		case frames, ok := <-f.router.Recv():
			if !ok {
				return
			}
			client := string(frames[0])
			f.mu.Lock()
			shunned := f.shunned[client]
			f.mu.Unlock()
			if shunned {
				continue
			}
			_, payload, err := wire.Decode(frames[1:])
			if err != nil {
				f.t.Errorf("fake engine: %v", err)
				continue
			}
			switch p := payload.(type) {
			case *wire.Hello:
				f.mu.Lock()
				f.clients[client] = true
				f.counted[client] = 0
				f.mu.Unlock()
				f.send(client, wire.MsgReady, &wire.Ready{ProtocolVersion: wire.ProtocolVersion, EngineIndex: f.rank, Model: "dummy",
					ServedModelName: "dummy", MaxModelLen: 256, VocabSize: 256, BlockSize: 4, NumBlocks: 64, EngineID: f.id})
			case *wire.EngineCoreRequest:
				f.mu.Lock()
				f.counted[client]++
				if f.strict && !f.clients[client] {
					f.mu.Unlock()
					f.output(client, wire.EngineCoreOutput{RequestID: p.RequestID, FinishReason: wire.FinishError,
						StopReason: "unknown frontend: send HELLO first", ErrorCode: wire.CodeUnknownFrontend})
					continue
				}
				f.adds = append(f.adds, p.RequestID)
				fn := f.onAdd
				f.mu.Unlock()
				if fn == nil {
					f.output(client, wire.EngineCoreOutput{RequestID: p.RequestID, NewTokenIDs: []int32{int32(f.rank)}, FinishReason: wire.FinishLength})
				} else {
					fn(f, client, p)
				}
			case *wire.Utility:
				res := &wire.UtilityResult{CallID: p.CallID}
				switch p.Method {
				case "get_events_endpoint":
					res.Result, _ = wire.Marshal(f.pub.Endpoint())
				case "list_requests":
					f.mu.Lock()
					list := []any{}
					for id := range f.listed {
						list = append(list, map[string]any{"request_id": id})
					}
					f.mu.Unlock()
					res.Result, _ = wire.Marshal(list)
				default:
					res.Result, _ = wire.Marshal(nil)
				}
				f.send(client, wire.MsgUtilityResult, res)
			}
		}
	}
}
