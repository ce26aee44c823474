package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tandem-llm/tandem/frontend/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tandemsoak:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tandemsoak", flag.ContinueOnError)
	tandem := fs.String("tandem", "bin/tandem", "the tandem binary to serve with (ignored with --url)")
	url := fs.String("url", "", "target a running server instead of starting one")
	pid := fs.Int("pid", 0, "with --url: the server's top process, for RSS sampling and fault injection")
	dp := fs.Int("data-parallel-size", 2, "engines for the server this starts")
	maxWaiting := fs.Int("max-waiting-requests", 0, "--max-waiting-requests for the server this starts (0 = none: no 429s)")
	serveArgs := fs.String("serve-args", "", "extra flags for `tandem serve`, space-separated")
	var cfg soak.Config
	fs.IntVar(&cfg.NumClients, "clients", 1000, "concurrent clients")
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "how long clients start new requests")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 32, "max_tokens upper bound per request")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the request contents")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", 2*time.Minute, "a request open longer, queueing included, is a hang")
	fs.DurationVar(&cfg.KillEngineEvery, "kill-engine-every", 0, "SIGKILL an engine this often (0 = never)")
	fs.StringVar(&cfg.APIKey, "api-key", "", "bearer token for the server")
	maxFrontendRSS := fs.Int64("max-frontend-rss-mib", 1024, "fail when a frontend's peak RSS exceeds this")
	maxEngineRSS := fs.Int64("max-engine-rss-mib", 4096, "fail when an engine's peak RSS exceeds this")
	markdown := fs.String("markdown", "", "write the Markdown report here (default: stdout)")
	jsonOut := fs.String("json", "", "write the JSON report here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	cfg.BaseURL, cfg.RootPID = *url, *pid
	if *url == "" {
		srv, err := startServe(ctx, *tandem, *dp, *maxWaiting, strings.Fields(*serveArgs))
		if err != nil {
			return err
		}
		defer srv.stop()
		cfg.BaseURL, cfg.RootPID = srv.base, srv.cmd.Process.Pid
	}
	rep, err := soak.Run(ctx, cfg)
	if err != nil {
		return err
	}
	out := os.Stdout
	if *markdown != "" {
		f, err := os.Create(*markdown)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := rep.WriteJSON(f); err != nil {
			return err
		}
	}
	failures := rep.Failures(soak.Limits{MaxRSS: map[string]int64{"frontend": *maxFrontendRSS << 20, "engine": *maxEngineRSS << 20}})
	if len(failures) > 0 {
		return fmt.Errorf("soak failed:\n  %s", strings.Join(failures, "\n  "))
	}
	fmt.Fprintf(os.Stderr, "tandemsoak: %d requests, %d faults injected, no failures, %d leaks\n", rep.NumRequests, len(rep.Faults), rep.Leaks())
	return nil
}

// server is a `tandem serve` this command started.
type server struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
}

func startServe(ctx context.Context, bin string, dp, maxWaiting int, extra []string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--model", "dummy", "--data-parallel-size", fmt.Sprint(dp), "--port", fmt.Sprint(port),
		"--max-waiting-requests", fmt.Sprint(maxWaiting), "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	fmt.Fprintf(os.Stderr, "tandemsoak: started %s %s (pid %d)\n", bin, strings.Join(args, " "), cmd.Process.Pid)
	if err := s.waitReady(ctx, dp, time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// waitReady waits until every engine is ready.
func (s *server) waitReady(ctx context.Context, numEngines int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if snap, err := soak.Scrape(ctx, http.DefaultClient, s.base, ""); err == nil {
			ready := 0
			for _, e := range snap.Engines {
				if e.State == "ready" {
					ready++
				}
			}
			if ready == numEngines {
				return nil
			}
		}
		select {
		case <-s.done:
			return errors.New("tandem serve exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("tandem serve not ready within %s", within)
}

// stop sends SIGTERM to serve's process group and waits, then SIGKILL.
func (s *server) stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
