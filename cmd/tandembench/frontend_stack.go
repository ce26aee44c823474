package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tandem-llm/tandem/frontend/engineclient"
)

// feStack is a null engine and a frontend, each a process of its own, and
// a Go engine client on the same engine.
type feStack struct {
	dir          string
	base         string // the frontend's http://host:port
	engine       *exec.Cmd
	frontend     *exec.Cmd
	engineArgs   []string
	frontendArgs []string
	http         *http.Client // health, /tokenize, /metrics
	client       *feClient    // the load
	direct       *engineclient.Client
	jitter       time.Duration // see runLoad
}

// buildTandem builds cmd/tandem into dir.
func buildTandem(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	bin := filepath.Join(dir, "tandem")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/tandem-llm/tandem/cmd/tandem")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("frontend: building tandem: %w", err)
	}
	return bin, nil
}

// startStack starts `tandem engine --device DEVICE` (null or null:STEP)
// and `tandem frontend`
// sized for maxStreams streams of gen tokens, and waits until the
// frontend is healthy and the engine client ready.
func startStack(ctx context.Context, bin, device string, maxStreams, gen int, stderr io.Writer) (*feStack, error) {
	dir, err := os.MkdirTemp("", "tandembench-fe-")
	if err != nil {
		return nil, err
	}
	s := &feStack{dir: dir}
	port, err := freeTCPPort()
	if err != nil {
		return nil, err
	}
	ep := "ipc://" + filepath.Join(dir, "engine-0")
	const maxModelLen = 1024
	kvTokens := maxStreams * (maxModelLen / 4) * 2 // prompts of ~40 tokens + gen, twice over
	s.engineArgs = []string{"engine", "dummy", "--device", device, "--listen", ep,
		"--max-model-len", strconv.Itoa(maxModelLen), "--max-num-seqs", strconv.Itoa(max(256, maxStreams)),
		"--kv-cache-memory", strconv.Itoa(kvTokens * feKVBytesPerToken), "--threads", "1"}
	s.frontendArgs = []string{"frontend", "--engines", ep, "--port", strconv.Itoa(port),
		"--max-connections", strconv.Itoa(max(4096, 2*maxStreams))}
	if gen >= maxModelLen/2 {
		return nil, fmt.Errorf("frontend: --frontend-gen-tokens %d: want < %d", gen, maxModelLen/2)
	}
	if s.engine, err = s.start(bin, "engine", s.engineArgs); err != nil {
		s.close()
		return nil, err
	}
	if s.frontend, err = s.start(bin, "frontend", s.frontendArgs); err != nil {
		s.close()
		return nil, err
	}
	s.base = "http://127.0.0.1:" + strconv.Itoa(port)
	s.http = &http.Client{}
	s.client = newFEClient(s.base)
	if err := s.waitHealthy(ctx, 60*time.Second); err != nil {
		s.close()
		return nil, err
	}
	if s.direct, err = engineclient.Dial(engineclient.Config{Endpoints: []string{ep}, FrontendID: "tandembench-direct", Logger: slog.New(slog.DiscardHandler)}); err != nil {
		s.close()
		return nil, fmt.Errorf("frontend: engine client: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.direct.WaitReady(wctx); err != nil {
		s.close()
		return nil, fmt.Errorf("frontend: engine client: %w", err)
	}
	fmt.Fprintf(stderr, "frontend: engine --device %s and frontend up (%s)\n", device, s.base)
	return s, nil
}

func (s *feStack) start(bin, name string, args []string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("frontend: start tandem %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); log.Close() }()
	return cmd, nil
}

// args is a process's command line for the report, with the run's
// temporary directory and port as DIR and PORT.
func (s *feStack) args(args []string) string {
	line := strings.ReplaceAll(strings.Join(args, " "), s.dir, "DIR")
	if i := strings.LastIndexByte(s.base, ':'); i >= 0 {
		line = strings.ReplaceAll(line, "--port "+s.base[i+1:], "--port PORT")
	}
	return line
}

// logTail is the last lines of a process's log, for errors.
func (s *feStack) logTail(name string) string {
	data, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

func (s *feStack) waitHealthy(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := s.http.Get(s.base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("frontend: not healthy within %s\nengine:\n%s\nfrontend:\n%s", within, s.logTail("engine"), s.logTail("frontend"))
}

// close stops both processes (SIGTERM, then SIGKILL) and removes the
// directory.
func (s *feStack) close() {
	if s.client != nil {
		s.client.close()
	}
	if s.direct != nil {
		_ = s.direct.Close()
		s.direct = nil
	}
	for _, c := range []*exec.Cmd{s.frontend, s.engine} {
		if c == nil || c.Process == nil {
			continue
		}
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		for i := 0; i < 100 && syscall.Kill(c.Process.Pid, 0) == nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	s.frontend, s.engine = nil, nil
	os.RemoveAll(s.dir)
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// fePrompt is one stream's chat message and its token ids after the chat
// template (the frontend's own /tokenize), for the direct requests.
type fePrompt struct {
	content string
	ids     []int32
}

// prompts gives stream i its own message.
func (s *feStack) prompts(ctx context.Context, n int) ([]fePrompt, error) {
	out := make([]fePrompt, n)
	for i := range out {
		content := fmt.Sprintf("Stream %d: tell me about the quick brown fox.", i)
		body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/tokenize", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("frontend: /tokenize: %w", err)
		}
		var tr struct {
			Tokens []int32 `json:"tokens"`
		}
		err = json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if err != nil || len(tr.Tokens) == 0 {
			return nil, fmt.Errorf("frontend: /tokenize: status %d: %v", resp.StatusCode, err)
		}
		out[i] = fePrompt{content: content, ids: tr.Tokens}
	}
	return out, nil
}

// procCPU is a process's utime + stime in seconds (/proc/PID/stat counts
// them in clockTicks).
func procCPU(pid int) (float64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which is in parentheses and may hold
	// spaces): state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("frontend: bad /proc/PID/stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("frontend: short /proc/PID/stat")
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (u + st) / clockTicks, nil
}

// feCounters are the frontend's /metrics figures the phase reads: its Go
// allocation counters and the sums and counts of its TTFT and engine
// queue-time histograms (over every label set).
type feCounters struct {
	mallocs, bytes       float64
	ttftSum, ttftCount   float64
	queueSum, queueCount float64
}

// counters scrapes the frontend's /metrics.
func (s *feStack) counters(ctx context.Context) (feCounters, error) {
	var c feCounters
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/metrics", nil)
	if err != nil {
		return c, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	into := map[string]*float64{
		"go_memstats_mallocs_total":              &c.mallocs,
		"go_memstats_alloc_bytes_total":          &c.bytes,
		"vllm:time_to_first_token_seconds_sum":   &c.ttftSum,
		"vllm:time_to_first_token_seconds_count": &c.ttftCount,
		"vllm:request_queue_time_seconds_sum":    &c.queueSum,
		"vllm:request_queue_time_seconds_count":  &c.queueCount,
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		dst, ok := into[name]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			return c, fmt.Errorf("frontend: /metrics: %q: %w", line, err)
		}
		*dst += v
		found++
	}
	if c.mallocs == 0 || c.bytes == 0 {
		return c, errors.New("frontend: /metrics has no go_memstats_mallocs_total or go_memstats_alloc_bytes_total")
	}
	return c, sc.Err()
}
