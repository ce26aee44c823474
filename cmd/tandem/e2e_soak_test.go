package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/soak"
)

// TestSoakShort is the short soak of `make test` (`make soak` runs the long one, see
// docs/reliability.md): `tandem serve --data-parallel-size 2 --model dummy` with a
// waiting-queue limit, 200 concurrent clients for 20 s with the default mix (streams,
// multi-turn sessions, cancellations, non-streaming and bad requests), and one engine
// SIGKILLed mid-run (serve restarts it). Requests may end in the documented overload
// answers (429, 503, or an "engine not available" error event for requests on the
// killed engine) but never in another 5xx, an unexpected 4xx, a cut stream or a hang;
// RSS stays bounded; afterwards the server is idle with its goroutines at the baseline.
// TANDEM_SOAK_SHORT_CLIENTS and TANDEM_SOAK_SHORT_DURATION override the size.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	numClients, duration := 200, 20*time.Second
	if v := os.Getenv("TANDEM_SOAK_SHORT_CLIENTS"); v != "" {
		fmt.Sscan(v, &numClients)
	}
	if v := os.Getenv("TANDEM_SOAK_SHORT_DURATION"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			duration = d
		}
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv := startProc(t, "serve", "--model", "dummy", "--data-parallel-size", "2", "--port", fmt.Sprint(port),
		"--max-waiting-requests", "150", "--max-model-len", "1024", "--kv-cache-memory", "64Mi", "--log-level", "warn")
	waitHealthy(t, base, srv)
	waitEngineState(t, base, 30*time.Second, func(e soak.EngineSnapshot) bool { return e.State == "ready" })

	rep, err := soak.Run(context.Background(), soak.Config{
		BaseURL: base, NumClients: numClients, Duration: duration, Seed: 9, RootPID: srv.cmd.Process.Pid,
		KillEngineEvery: duration / 3, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	_ = rep.WriteMarkdown(&md)
	t.Logf("soak report:\n%s", md.String())
	if len(rep.Faults) == 0 {
		t.Error("no fault was injected")
	}
	failures := rep.Failures(soak.Limits{MaxRSS: map[string]int64{"frontend": 512 << 20, "engine": 1 << 30, "serve": 256 << 20}})
	for _, f := range failures {
		t.Error(f)
	}
}
