package inproc_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/inproc"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
)

// TestServesAndStops: an in-process dummy engine answers a frontend over
// its endpoint like an engine process, with the session recorded; Close
// tells the frontend it shut down and removes the socket.
func TestServesAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eng, err := inproc.Start(ctx, inproc.Config{Model: "dummy", Threads: 1, MaxModelLen: 256, MaxNumSeqs: 4})
	if err != nil {
		t.Fatal(err)
	}
	ep := eng.Endpoint()
	if !strings.HasPrefix(ep, "ipc://") {
		t.Fatalf("endpoint %q, want ipc://", ep)
	}
	c, err := engineclient.Dial(engineclient.Config{Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	info, _ := c.Info()
	if info.ServedModelName != "dummy" || info.MaxModelLen != 256 {
		t.Errorf("ready: model %q, max len %d", info.ServedModelName, info.MaxModelLen)
	}
	p := wire.DefaultSamplingParams()
	p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, 5, true
	prompt := make([]int32, 20)
	for i := range prompt {
		prompt[i] = int32('a' + i)
	}
	g, err := c.Generate(ctx, prompt, p, "r1", engineclient.WithSessionID("conv"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for {
		o, err := g.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(o.NewTokenIDs)
	}
	if n != 5 {
		t.Errorf("%d tokens, want 5", n)
	}
	sess, err := c.Session(ctx, "conv")
	if err != nil || len(sess) != 1 || sess[0].NumRequests != 1 {
		t.Errorf("session record %+v, %v; want one engine with 1 request", sess, err)
	}
	if err := eng.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := eng.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(strings.TrimPrefix(ep, "ipc://")); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := inproc.Start(ctx, inproc.Config{Model: "/no/such/model.gguf"}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing model: %v", err)
	}
	if _, err := inproc.Start(ctx, inproc.Config{Model: "dummy", KVCacheBytes: 1, Threads: 1}); err == nil || !strings.Contains(err.Error(), "holds no KV block") {
		t.Errorf("tiny KV cache: %v", err)
	}
}
