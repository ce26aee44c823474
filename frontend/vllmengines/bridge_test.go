package vllmengines_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/frontend/vllmengines"
	"github.com/tandem-llm/tandem/wire"
)

// fakeVLLM starts n fake `vllm serve --headless` engines
// (scripts/vllmwire/fake_engine.py, written from vLLM 0.33's source) and
// a Bridge they handshake with, and returns an engineclient dialled to
// the bridge's endpoints, ready, and the engines' message log.
func fakeVLLM(t *testing.T, n int, engineArgs ...string) (*engineclient.Client, string) {
	t.Helper()
	python, err := filepath.Abs(filepath.Join("..", "..", ".cache", "kvevents-venv", "bin", "python"))
	if err != nil || !exists(python) {
		t.Skip("no .cache/kvevents-venv (make sdktests makes it): the fake vLLM engine needs msgspec and pyzmq")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	hs := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	b, err := vllmengines.Start(vllmengines.Config{HandshakeAddress: hs, Engines: n, Model: "dummy",
		ServedModelName: "fake", VocabSize: 32000, EOSTokenIDs: []int32{2}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	logPath := filepath.Join(t.TempDir(), "engine.log")
	for r := range n {
		args := append([]string{filepath.Join("..", "..", "scripts", "vllmwire", "fake_engine.py"),
			"--handshake", hs, "--rank", fmt.Sprint(r), "--vocab", "32000", "--step-ms", "5", "--log", logPath}, engineArgs...)
		cmd := exec.Command(python, args...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
	c, err := engineclient.Dial(engineclient.Config{Endpoints: b.Endpoints(), Routing: router.Session,
		HeartbeatInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("engines not ready through the bridge: %v", err)
	}
	waitFor(t, "every rank ready", func() bool {
		for _, e := range c.Engines() {
			if !e.Ready {
				return false
			}
		}
		return true
	})
	return c, logPath
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// engineLog reads the fake engines' log: one JSON object per message.
func engineLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

type result struct {
	tokens   []int32
	finish   wire.FinishReason
	stop     any
	cached   int
	logprobs int // positions with logprobs
	cols     int // columns of the last logprobs row
	engine   int
}

func run(t *testing.T, c *engineclient.Client, id, session string, prompt []int32, p wire.SamplingParams) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.Submit(ctx, &wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: prompt, SamplingParams: p, SessionID: session,
		ArrivalTime: float64(time.Now().UnixNano()) / 1e9})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var res result
	for first := true; ; first = false {
		o, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if first {
			res.cached = o.NumCachedTokens
		}
		res.tokens = append(res.tokens, o.NewTokenIDs...)
		if o.NewLogprobs != nil {
			res.logprobs += len(o.NewLogprobs.TokenIDs)
			res.cols = len(o.NewLogprobs.TokenIDs[len(o.NewLogprobs.TokenIDs)-1])
		}
		if o.FinishReason != wire.FinishNone {
			res.finish, res.stop = o.FinishReason, o.StopReason
			break
		}
	}
	res.engine = s.EngineIndex()
	return res
}

func seq(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

func sum(p []int32) int {
	s := 0
	for _, x := range p {
		s += int(x)
	}
	return s
}

// TestBridgeFakeVLLMEngines drives two fake vLLM 0.33 engines through
// the bridge with Tandem's own engine client: tokens, finish reasons,
// logprobs and cached-token counts come back translated, session_id
// reaches the engine at index 20, a conversation's turns stay on one DP
// engine, and a cancelled request is aborted in the engine.
func TestBridgeFakeVLLMEngines(t *testing.T) {
	c, logPath := fakeVLLM(t, 2)
	p := wire.DefaultSamplingParams()
	p.MaxTokens = 5
	two := 2
	p.Logprobs = &two

	prompt := seq(100, 40)
	r1 := run(t, c, "turn-1", "conv-42", prompt, p)
	base := sum(prompt)
	for k, tok := range r1.tokens {
		if want := int32((base + k) % 32000); tok != want {
			t.Fatalf("token %d = %d, want %d (the fake's rule)", k, tok, want)
		}
	}
	if len(r1.tokens) != 5 || r1.finish != wire.FinishLength {
		t.Errorf("turn 1: %d tokens, finish %v; want 5, length", len(r1.tokens), r1.finish)
	}
	if r1.logprobs != 5 || r1.cols != 3 {
		t.Errorf("turn 1 logprobs: %d positions × %d columns, want 5 × 3 (sampled + top 2)", r1.logprobs, r1.cols)
	}
	if r1.cached != 0 {
		t.Errorf("turn 1 cached %d tokens, want 0", r1.cached)
	}
	// Turn 2 extends turn 1: it must land on the same engine, which has
	// the first two blocks cached.
	prompt2 := append(append(append([]int32{}, prompt...), r1.tokens...), seq(7000, 10)...)
	r2 := run(t, c, "turn-2", "conv-42", prompt2, p)
	if r2.engine != r1.engine {
		t.Errorf("turn 2 went to engine %d, turn 1 to %d: a session must stay on its engine", r2.engine, r1.engine)
	}
	if r2.cached != 32 {
		t.Errorf("turn 2 cached %d tokens, want 32 (two 16-token blocks of turn 1's prompt)", r2.cached)
	}
	// EOS: the fake's first token for prompt [2] is 2, the EOS id the
	// bridge sends as _eos_token_id.
	if r := run(t, c, "eos", "", []int32{2}, wire.DefaultSamplingParams()); len(r.tokens) != 1 || r.finish != wire.FinishStop || r.stop != nil {
		t.Errorf("EOS: tokens %v finish %v stop %v; want one token, stop, no stop reason", r.tokens, r.finish, r.stop)
	}
	// A stop token: stop_reason is the token id.
	ps := wire.DefaultSamplingParams()
	ps.StopTokenIDs = []int32{int32((sum([]int32{10, 20}) + 3) % 32000)}
	if r := run(t, c, "stop-token", "", []int32{10, 20}, ps); len(r.tokens) != 4 || r.finish != wire.FinishStop || fmt.Sprint(r.stop) != fmt.Sprint(ps.StopTokenIDs[0]) {
		t.Errorf("stop token: tokens %v finish %v stop %v; want 4 tokens, stop, %d", r.tokens, r.finish, r.stop, ps.StopTokenIDs[0])
	}
	// Other conversations spread over both DP engines.
	engines := map[int]bool{}
	for i := range 8 {
		r := run(t, c, fmt.Sprintf("conv-%d", i), fmt.Sprintf("other-%d", i), seq(i*50, 20), p)
		engines[r.engine] = true
	}
	if len(engines) != 2 {
		t.Errorf("8 new sessions all went to engines %v; want both", engines)
	}
	// Abort: cancel a long request after its first output.
	ctx, cancel := context.WithCancel(context.Background())
	pl := wire.DefaultSamplingParams()
	pl.MaxTokens = 100000
	s, err := c.Submit(ctx, &wire.EngineCoreRequest{RequestID: "long", PromptTokenIDs: seq(1, 8), SamplingParams: pl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	s.Close()
	waitFor(t, "the engine to receive ABORT for the cancelled request", func() bool {
		for _, m := range engineLog(t, logPath) {
			if m["type"] == "ABORT" && strings.Contains(fmt.Sprint(m["request_ids"]), "long") {
				return true
			}
		}
		return false
	})
	// What the engine received: 22-element ADDs, session_id at index 20,
	// the EOS keys vLLM's frontend fills.
	var sawSession bool
	for _, m := range engineLog(t, logPath) {
		if m["type"] != "ADD" {
			continue
		}
		if m["num_fields"] != float64(22) {
			t.Errorf("ADD with %v fields, want 22", m["num_fields"])
		}
		if strings.HasSuffix(fmt.Sprint(m["request_id"]), "turn-1") {
			sawSession = m["session_id"] == "conv-42"
			sp, _ := m["sampling_params"].(map[string]any)
			if fmt.Sprint(sp["_eos_token_id"]) != "2" || fmt.Sprint(sp["_all_stop_token_ids"]) != "[2]" {
				t.Errorf("turn 1 sampling params %v: want _eos_token_id 2, _all_stop_token_ids [2]", sp)
			}
		}
	}
	if !sawSession {
		t.Error("the engine never saw turn 1 with session_id conv-42 at index 20")
	}
}

// TestBridgeEngineCoreDead: a vLLM engine that dies says ENGINE_CORE_DEAD;
// the bridge turns it into ENGINE_DEAD, the client marks the engine down
// and fails its requests.
func TestBridgeEngineCoreDead(t *testing.T) {
	c, _ := fakeVLLM(t, 1, "--die-after-requests", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.Submit(ctx, &wire.EngineCoreRequest{RequestID: "doomed", PromptTokenIDs: seq(1, 8), SamplingParams: wire.DefaultSamplingParams()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(ctx); !errors.Is(err, engineclient.ErrEngineDead) {
		t.Fatalf("Next on a dead engine: %v, want ErrEngineDead", err)
	}
	waitFor(t, "the engine marked not ready", func() bool { return !c.Engines()[0].Ready })
}
