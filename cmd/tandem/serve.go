package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runServe starts K engine cores and M frontends as separate processes of
// this same binary, restarts any that die (with backoff), and stops them
// all on SIGINT/SIGTERM.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tandem serve", flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	var ff frontendFlags
	ff.registerHTTP(fs)
	fs.StringVar(&ff.tokenizer, "tokenizer", "", "tokenizer to use: a GGUF file or a Hugging Face directory (default: the model)")
	fs.StringVar(&ff.chatTemplate, "chat-template", "", "a Jinja chat template file replacing the model's")
	dp := fs.Int("data-parallel-size", 1, "engine cores to start (K); on CPU they split --threads")
	apiServers := fs.Int("api-server-count", 1, "frontend processes to start (M), sharing the port with SO_REUSEPORT")
	runDir := fs.String("run-dir", "", "directory for the engines' IPC sockets (default: a new temporary directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *dp < 1 || *apiServers < 1 {
		return fmt.Errorf("serve: --data-parallel-size and --api-server-count must be ≥ 1")
	}
	ff.log = ef.log
	log, err := stderrLogger(&ef.log, "proc", "serve")
	if err != nil {
		return err
	}
	dir := *runDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tandem-"); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("serve: locating the tandem binary: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	devices, err := serveDevices(set, ef.device, *dp, log) // one engine per GPU, else CPU engines
	if err != nil {
		return err
	}
	*dp = len(devices)
	threads := ef.threads
	if !set["threads"] {
		threads = max(1, runtime.NumCPU() / *dp)
	}

	var endpoints []string
	var procs []*child
	for i := range *dp {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
		endpoints = append(endpoints, ep)
		a := []string{"engine",
			"--listen", ep,
			"--events", "ipc://" + filepath.Join(dir, fmt.Sprintf("events-%d.sock", i)),
			"--data-parallel-rank", strconv.Itoa(i),
			"--threads", strconv.Itoa(threads),
			"--device", devices[i],
		}
		a = append(a, passThrough(fs, set, engineFlagNames)...)
		procs = append(procs, &child{name: fmt.Sprintf("engine-%d", i), exe: exe, args: a})
	}
	for i := range *apiServers {
		a := []string{"frontend", "--engines", strings.Join(endpoints, ",")}
		if *apiServers > 1 {
			a = append(a, "--reuse-port")
		}
		a = append(a, passThrough(fs, set, frontendFlagNames)...)
		procs = append(procs, &child{name: fmt.Sprintf("frontend-%d", i), exe: exe, args: a})
	}
	log.Info("starting", "engines", *dp, "frontends", *apiServers, "threads_per_engine", threads, "run_dir", dir,
		"url", fmt.Sprintf("http://%s:%d", ff.host, ff.port))
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.supervise(ctx, log) }()
	}
	wg.Wait()
	log.Info("all processes stopped")
	return nil
}

// Flags that serve forwards to engines and frontends when given.
var (
	engineFlagNames = []string{"model", "served-model-name", "max-model-len", "max-num-seqs", "max-num-batched-tokens",
		"block-size", "kv-cache-memory", "cpu-precision", "gpu-memory-utilization", "enable-prefix-caching", "heartbeat-interval", "heartbeat-timeout",
		"log-level", "log-format"}
	frontendFlagNames = []string{"host", "port", "api-key", "served-model-name", "heartbeat-interval", "heartbeat-timeout",
		"log-level", "log-format", "max-request-body", "tokenizer", "chat-template", "routing", "max-waiting-requests"}
)

func passThrough(fs *flag.FlagSet, set map[string]bool, names []string) []string {
	var out []string
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && (set[n] || n == "model") {
			out = append(out, "--"+n+"="+f.Value.String())
		}
	}
	return out
}

// child is one supervised process.
type child struct {
	name string
	exe  string
	args []string
}

// supervise runs the child until ctx ends, restarting it with exponential
// backoff (1 s … 30 s) whenever it exits.
func (c *child) supervise(ctx context.Context, log *slog.Logger) {
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		cmd := exec.Command(c.exe, c.args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			log.Error("cannot start process", "proc", c.name, "err", err)
			return
		}
		log.Info("process started", "proc", c.name, "pid", cmd.Process.Pid)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return
			}
			if time.Since(start) > time.Minute {
				backoff = time.Second
			}
			log.Error("process exited; restarting", "proc", c.name, "err", exitText(err), "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, 30*time.Second)
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				log.Warn("process ignored SIGTERM; killing", "proc", c.name)
				_ = cmd.Process.Kill()
				<-done
			}
			log.Info("process stopped", "proc", c.name)
			return
		}
	}
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
