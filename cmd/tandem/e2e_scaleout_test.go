package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// scaleout is K engines and M frontends started as separate processes,
// every frontend attached to every engine.
type scaleout struct {
	dir       string
	engines   []*proc
	frontends []string // base URLs
	hb        []string
}

func (s *scaleout) engineArgs(i int) []string {
	return append([]string{"engine", "--model", "dummy",
		"--listen", "ipc://" + filepath.Join(s.dir, fmt.Sprintf("engine-%d.sock", i)),
		"--events", "ipc://" + filepath.Join(s.dir, fmt.Sprintf("events-%d.sock", i)),
		"--data-parallel-rank", strconv.Itoa(i),
		"--max-model-len", "2048", "--kv-cache-memory", "64Mi", "--threads", "1"}, s.hb...)
}

func startScaleout(t *testing.T, numEngines, numFrontends int, routing string) *scaleout {
	t.Helper()
	s := &scaleout{dir: t.TempDir(), hb: []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}}
	var eps []string
	for i := range numEngines {
		s.engines = append(s.engines, startProc(t, s.engineArgs(i)...))
		eps = append(eps, "ipc://"+filepath.Join(s.dir, fmt.Sprintf("engine-%d.sock", i)))
	}
	for range numFrontends {
		port := freePort(t)
		fe := startProc(t, append([]string{"frontend", "--engines", joinComma(eps), "--port", strconv.Itoa(port), "--routing", routing}, s.hb...)...)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitHealthy(t, base, fe)
		s.frontends = append(s.frontends, base)
	}
	for _, fe := range s.frontends {
		s.waitEngines(t, fe, numEngines)
	}
	// Ready engines are routed to once each frontend's subscription to
	// their reports is live (engineclient's sync, ~100 ms).
	time.Sleep(500 * time.Millisecond)
	return s
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// engineView is the part of GET /v1/engines the tests read.
type engineView struct {
	State       string `json:"state"`
	PID         int    `json:"pid"`
	NumSessions int    `json:"num_sessions"`
}

func engines(t *testing.T, base string) []engineView {
	t.Helper()
	resp, err := http.Get(base + "/v1/engines")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data []engineView `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Data
}

// waitEngines waits until the frontend at base sees n ready engines.
func (s *scaleout) waitEngines(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := 0
		for _, e := range engines(t, base) {
			if e.State == "ready" {
				ready++
			}
		}
		if ready == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s sees %d ready engines, want %d", base, ready, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chat sends one non-streaming turn and returns the answer's text.
func chat(base, session string, history []chatMsg) (string, error) {
	b, _ := json.Marshal(map[string]any{"model": "dummy", "messages": history, "max_tokens": 4, "ignore_eos": true})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-ID", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	var out struct {
		Choices []struct {
			Message chatMsg `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) != 1 {
		return "", fmt.Errorf("bad answer %s: %v", raw, err)
	}
	return out.Choices[0].Message.Content, nil
}

// sessionEngines is GET /v1/sessions/{id}: engine index → requests it saw.
func sessionEngines(t *testing.T, base, id string) map[int]int {
	t.Helper()
	code, body := getJSON(t, base+"/v1/sessions/"+id)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/sessions/%s: %d %v", id, code, body)
	}
	out := map[int]int{}
	for _, e := range body["engines"].([]any) {
		m := e.(map[string]any)
		out[int(m["engine_index"].(float64))] = int(m["num_requests"].(float64))
	}
	return out
}

// conversation is one multi-turn chat of the test.
type conversation struct {
	id      string
	history []chatMsg
	engine  int // where its turns land
}

// runWave sends the next turn of every conversation concurrently,
// conversation c through frontend (c + turn) mod M. Failures are returned
// by conversation.
func runWave(s *scaleout, convs []*conversation, turn int) map[string]error {
	var mu sync.Mutex
	failed := map[string]error{}
	var wg sync.WaitGroup
	for c, cv := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cv.history = append(cv.history, chatMsg{Role: "user", Content: fmt.Sprintf("turn %d of %s: tell me more about rivers and stones", turn, cv.id)})
			answer, err := chat(s.frontends[(c+turn)%len(s.frontends)], cv.id, cv.history)
			if err != nil {
				mu.Lock()
				failed[cv.id] = err
				mu.Unlock()
				return
			}
			cv.history = append(cv.history, chatMsg{Role: "assistant", Content: answer})
		}()
	}
	wg.Wait()
	return failed
}

// TestScaleOutConversations is the acceptance run: two frontends
// × two engines, 20 conversations × 5 turns alternating frontends turn by
// turn. Every turn of a conversation lands on one engine and both engines
// get work; after turn 2 one engine is frozen, then killed while turn 3
// is in flight: no conversation fails, the moved ones continue on the
// survivor, and once the engine is back it takes new sessions again.
func TestScaleOutConversations(t *testing.T) {
	s := startScaleout(t, 2, 2, "session")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var convs []*conversation
	for i := range 20 {
		convs = append(convs, &conversation{id: fmt.Sprintf("conv-%s-%d", run, i), history: []chatMsg{{Role: "system", Content: "You are terse."}}})
	}
	// Turns 1 and 2.
	for turn := 1; turn <= 2; turn++ {
		if failed := runWave(s, convs, turn); len(failed) > 0 {
			t.Fatalf("turn %d: %d conversations failed: %v", turn, len(failed), failed)
		}
		for c, cv := range convs {
			got := sessionEngines(t, s.frontends[c%2], cv.id)
			if len(got) != 1 {
				t.Fatalf("turn %d: %s is on engines %v, want exactly one", turn, cv.id, got)
			}
			for e, n := range got {
				if turn > 1 && e != cv.engine {
					t.Fatalf("turn %d: %s moved from engine %d to %d", turn, cv.id, cv.engine, e)
				}
				if n != turn {
					t.Fatalf("turn %d: %s has %d requests on engine %d, want %d", turn, cv.id, n, e, turn)
				}
				cv.engine = e
			}
		}
	}
	perEngine := map[int]int{}
	for _, cv := range convs {
		perEngine[cv.engine]++
	}
	if perEngine[0] == 0 || perEngine[1] == 0 {
		t.Fatalf("conversations per engine %v: both engines must get work", perEngine)
	}
	// The engines' own counts agree (sessions resident on each).
	waitFor(t, "the engines' session counts", func() bool {
		v := engines(t, s.frontends[0])
		return len(v) == 2 && v[0].NumSessions == perEngine[0] && v[1].NumSessions == perEngine[1]
	})

	// Turn 3 while engine 1 is frozen, then killed.
	victim := s.engines[1]
	victim.signal(syscall.SIGSTOP)
	time.AfterFunc(300*time.Millisecond, func() { victim.signal(syscall.SIGKILL) })
	if failed := runWave(s, convs, 3); len(failed) > 0 {
		t.Fatalf("turn 3 (engine 1 killed): %d conversations failed: %v", len(failed), failed)
	}
	<-victim.done
	moved := map[string]bool{}
	for c, cv := range convs {
		got := sessionEngines(t, s.frontends[c%2], cv.id)
		if cv.engine == 1 {
			moved[cv.id] = true
			if len(got) != 1 || got[0] != 1 {
				t.Fatalf("turn 3: moved %s is on %v, want engine 0 with 1 request", cv.id, got)
			}
			cv.engine = 0
		} else if len(got) != 1 || got[0] != 3 {
			t.Fatalf("turn 3: %s is on %v, want engine 0 with 3 requests", cv.id, got)
		}
	}

	// Engine 1 comes back (as serve would restart it) and rejoins.
	s.engines[1] = startProc(t, s.engineArgs(1)...)
	for _, fe := range s.frontends {
		s.waitEngines(t, fe, 2)
	}
	time.Sleep(500 * time.Millisecond) // the frontends' sync with the restarted engine
	for turn := 4; turn <= 5; turn++ {
		if failed := runWave(s, convs, turn); len(failed) > 0 {
			t.Fatalf("turn %d: %d conversations failed: %v", turn, len(failed), failed)
		}
	}
	for c, cv := range convs {
		got := sessionEngines(t, s.frontends[c%2], cv.id)
		want := map[int]int{cv.engine: 5}
		if moved[cv.id] {
			want = map[int]int{0: 3} // turns 3–5 on the survivor
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("after turn 5: %s is on %v, want %v", cv.id, got, want)
		}
	}

	// New sessions go to the restarted engine again.
	var fresh []*conversation
	for i := range 16 {
		fresh = append(fresh, &conversation{id: fmt.Sprintf("new-%s-%d", run, i)})
	}
	if failed := runWave(s, fresh, 1); len(failed) > 0 {
		t.Fatalf("new sessions: %d failed: %v", len(failed), failed)
	}
	onRestarted := 0
	for _, cv := range fresh {
		if got := sessionEngines(t, s.frontends[0], cv.id); got[1] == 1 {
			onRestarted++
		}
	}
	if onRestarted == 0 {
		t.Errorf("none of 16 new sessions went to the restarted engine")
	}
	t.Logf("conversations per engine before the kill %v; %d moved; %d of 16 new sessions on the restarted engine", perEngine, len(moved), onRestarted)
}

// TestServeRestartsEngine: `tandem serve` with two engines and two
// frontends sharing the port restarts an engine SIGKILLed after it was
// ready (a crash, not a start-up failure: serve keeps serving), which
// rejoins and takes new sessions.
func TestServeRestartsEngine(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := startProc(t, "serve", "--model", "dummy", "--data-parallel-size", "2", "--api-server-count", "2", "--port", strconv.Itoa(port),
		"--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms")
	waitHealthy(t, base, p)
	s := &scaleout{frontends: []string{base}}
	s.waitEngines(t, base, 2)
	pidRe := regexp.MustCompile(`"process started".* child=engine-1 pid=(\d+)`)
	m := pidRe.FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no engine-1 pid in serve's log:\n%s", p.out.String())
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var newPID string
	waitFor(t, "serve to restart engine-1", func() bool {
		all := pidRe.FindAllStringSubmatch(p.out.String(), -1)
		if len(all) >= 2 {
			newPID = all[len(all)-1][1]
		}
		return newPID != ""
	})
	if !strings.Contains(p.out.String(), `msg="process exited; restarting" proc=serve child=engine-1 err="signal: killed`) {
		t.Errorf("serve's log does not say it restarts the killed engine:\n%s", p.out.String())
	}
	// Both frontends (SO_REUSEPORT: fresh connections land on either) see
	// the new engine-1 ready: 8 answers in a row say so.
	inARow := 0
	waitFor(t, "the frontends to see the restarted engine", func() bool {
		http.DefaultClient.CloseIdleConnections()
		v := engines(t, base)
		if len(v) == 2 && v[1].State == "ready" && fmt.Sprint(v[1].PID) == newPID {
			inARow++
		} else {
			inARow = 0
		}
		return inARow >= 8
	})
	time.Sleep(500 * time.Millisecond) // the frontends' sync with it
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	on1 := 0
	for i := range 16 {
		id := fmt.Sprintf("after-restart-%s-%d", run, i)
		if _, err := chat(base, id, []chatMsg{{Role: "user", Content: "hello"}}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got := sessionEngines(t, base, id); got[1] == 1 {
			on1++
		}
	}
	if on1 == 0 {
		t.Error("the restarted engine took none of 16 new sessions")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
