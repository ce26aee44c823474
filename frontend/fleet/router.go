package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tandem-llm/tandem/frontend/hfhub"
)

// Config is a router's configuration.
type Config struct {
	Sources  Sources
	Max      int  // --models-max; ≤ 0 = no limit
	Autoload bool // load a model a request names (--no-models-autoload clears it)
	// Command is a child's command line: the binary and its arguments for
	// serving spec on 127.0.0.1:port.
	Command   func(spec Spec, port int) ([]string, error)
	APIKeys   []string      // --api-key: every route but /health and /models needs one
	Delay     time.Duration // test hook: a wait before each load and each proxied request (LLAMA_SERVER_DEBUG_FAKE_TIMING)
	BuildInfo string        // /props' build_info
	Log       *slog.Logger
	Output    io.Writer     // the children's stdout and stderr (default os.Stderr)
	StopWait  time.Duration // how long a stopped child has before SIGKILL (default 10s)
	Keepalive time.Duration // how long a quiet /models/sse stream waits to send a comment (default 15s)
	// Edge wraps the router's routes with what it answers itself besides
	// them (server.Edge: the CORS policy, /tools, /cors-proxy), inside
	// the API key check; nil: nothing.
	Edge func(next http.Handler) http.Handler
	// Hub downloads POST /models's models into Sources.Cache (its cache
	// directory must be that one) and removes DELETE /models's; nil: both
	// are refused.
	Hub *hfhub.Client
	// Offline refuses downloads (llama-server's --offline): POST /models
	// takes only a model the cache already holds.
	Offline bool
}

// Router runs the fleet: it starts and stops children and proxies to them.
type Router struct {
	cfg     Config
	mu      sync.Mutex
	fleet   *Fleet
	convs   Convs
	procs   map[string]*os.Process
	names   map[string]bool // the catalog's names, for Exited
	changed chan struct{}   // closed (and replaced) at every change
	sse     hub             // GET /models/sse's subscribers
	wg      sync.WaitGroup  // the children's monitors and the downloads
	client  *http.Client

	ctx       context.Context               // cancelled by Close: ends the downloads
	stop      context.CancelFunc            // cancels ctx
	downloads map[string]context.CancelFunc // running downloads by model, under mu
}

// NewRouter reads the catalog and returns a router; Handler serves it.
func NewRouter(cfg Config) (*Router, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Output == nil {
		cfg.Output = os.Stderr
	}
	if cfg.StopWait <= 0 {
		cfg.StopWait = 10 * time.Second
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = defaultKeepalive
	}
	r := &Router{cfg: cfg, fleet: New(cfg.Max), procs: map[string]*os.Process{}, changed: make(chan struct{}),
		client:    &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, DisableCompression: true}},
		downloads: map[string]context.CancelFunc{}}
	r.ctx, r.stop = context.WithCancel(context.Background())
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload re-reads the catalog; running models no longer in it are stopped.
func (r *Router) Reload() error { return r.reload(nil) }

// reload is Reload; change, if not nil, runs under the same lock just
// before the catalog is replaced, so that its events (a download's end)
// and the reload's go out together.
func (r *Router) reload(change func()) error {
	specs, err := r.cfg.Sources.Load()
	if err != nil {
		if change != nil {
			r.mu.Lock()
			change()
			r.broadcast()
			r.mu.Unlock()
		}
		return err
	}
	r.mu.Lock()
	if change != nil {
		change()
	}
	r.names = map[string]bool{}
	for _, s := range specs {
		r.names[s.Name] = true
	}
	gone := r.fleet.Sync(specs)
	r.broadcast()
	r.mu.Unlock()
	for _, name := range gone {
		r.Unload(name)
	}
	return nil
}

// broadcast sends the core's events to /models/sse and wakes every
// waiter; the caller holds mu and calls it after every change.
func (r *Router) broadcast() {
	for _, e := range r.fleet.Events() {
		r.sse.publish(sseEvent(e))
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Startup loads the models whose preset says load-on-startup.
func (r *Router) Startup(ctx context.Context) {
	r.mu.Lock()
	var names []string
	for _, m := range r.fleet.List() {
		if m.Startup {
			names = append(names, m.Name)
		}
	}
	r.mu.Unlock()
	for _, n := range names {
		if err := r.Load(ctx, n); err != nil {
			r.cfg.Log.Warn("load on startup failed", "model", n, "err", err)
		}
	}
}

// Load starts name's child (llama-server's load): first, with every slot
// taken, it stops the least recently used idle model and waits for it to
// exit. It returns once the child is started, not loaded. A preset model
// whose hf-repo the cache lacks is fetched first, in the background
// (fetch.go): Load returns once the download has begun.
func (r *Router) Load(ctx context.Context, name string) error {
	if err := sleep(ctx, r.cfg.Delay); err != nil {
		return err
	}
	r.mu.Lock()
	victim := ""
	if !r.fleet.HasCapacity() {
		victim = r.fleet.Victim("")
	}
	r.mu.Unlock()
	if victim != "" {
		r.cfg.Log.Info("models-max reached, unloading the least recently used", "model", victim)
		r.Unload(victim)
		if err := r.waitFor(ctx, victim, func(m Model) bool { return m.Status == Unloaded }); err != nil {
			return err
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	r.mu.Lock()
	m, _ := r.fleet.Get(name)
	if repo := m.Remote(); repo != "" && r.cfg.Hub != nil && !r.cfg.Offline {
		started, err := r.fleet.Fetch(name)
		if started {
			r.startFetch(m.Name, repo)
		}
		r.broadcast()
		r.mu.Unlock()
		return err
	}
	started, err := r.fleet.Start(name, port)
	if err != nil || !started {
		r.mu.Unlock()
		return err
	}
	r.broadcast()
	r.mu.Unlock()
	r.spawn(m.Spec, port)
	return nil
}

// spawn starts the child of s, a model just marked loading on port, and
// its monitor; a child that cannot start is shown as failed, as one that
// dies is.
func (r *Router) spawn(s Spec, port int) {
	argv, err := r.command(s, port)
	var cmd *exec.Cmd
	if err == nil {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = r.cfg.Output, r.cfg.Output
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM} // its own group; gone with the router
		err = cmd.Start()
	}
	if err != nil {
		r.cfg.Log.Error("model failed to start", "model", s.Name, "err", err)
		r.exited(s.Name, 1)
		return
	}
	r.cfg.Log.Info("loading model", "model", s.Name, "port", port, "pid", cmd.Process.Pid)
	r.mu.Lock()
	r.procs[s.Name] = cmd.Process
	cur, _ := r.fleet.Get(s.Name)
	closing := r.ctx.Err() != nil // Close began after this child's load: its list of children lacks it
	r.mu.Unlock()
	r.wg.Add(1)
	go r.monitor(s.Name, port, cmd)
	if cur.Stopping || closing { // unloaded before it had a process to signal
		r.Unload(s.Name)
	}
}

func (r *Router) command(s Spec, port int) ([]string, error) {
	if s.Path == "" {
		switch repo := s.Remote(); {
		case repo != "" && r.cfg.Offline:
			return nil, fmt.Errorf("model %s: its hf-repo %s is not in the models cache, and offline mode downloads nothing", s.Name, repo)
		case repo != "":
			return nil, fmt.Errorf("model %s: its hf-repo %s is not in the models cache, and there is no models cache to download it into", s.Name, repo)
		}
		return nil, fmt.Errorf("model %s has no local file (not in the models cache: POST /models downloads one)", s.Name)
	}
	argv, err := r.cfg.Command(s, port)
	if err == nil && len(argv) == 0 {
		err = errors.New("empty child command")
	}
	return argv, err
}

// monitor polls the child's /health until it answers 200 (loaded), and
// records its exit.
func (r *Router) monitor(name string, port int, cmd *exec.Cmd) {
	defer r.wg.Done()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
poll:
	for {
		select {
		case <-done:
			break poll
		case <-tick.C:
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if len(r.cfg.APIKeys) > 0 {
			req.Header.Set("Authorization", "Bearer "+r.cfg.APIKeys[0])
		}
		resp, err := r.client.Do(req)
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			r.mu.Lock()
			r.fleet.Ready(name)
			r.broadcast()
			r.mu.Unlock()
			r.cfg.Log.Info("model loaded", "model", name, "port", port)
			break
		}
	}
	<-done
	code := cmd.ProcessState.ExitCode()
	r.cfg.Log.Info("model stopped", "model", name, "exit_code", code)
	r.exited(name, code)
}

func (r *Router) exited(name string, code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.procs, name)
	r.fleet.Exited(name, code, r.names[name])
	r.broadcast()
}

// Unload stops name's child: SIGTERM to its process group, SIGKILL after
// StopWait; or cancels the download its load began. It returns at once;
// the status turns unloaded at the exit (or the download's end).
func (r *Router) Unload(name string) bool {
	r.mu.Lock()
	ok := r.fleet.Stop(name)
	m, _ := r.fleet.Get(name)
	p, cancel := r.procs[m.Name], r.downloads[m.Name]
	r.broadcast()
	r.mu.Unlock()
	if ok && m.Fetching && cancel != nil {
		r.cfg.Log.Info("cancelling the download of a load", "model", m.Name)
		cancel()
		return true
	}
	if !ok || p == nil {
		return ok
	}
	name = m.Name
	r.cfg.Log.Info("unloading model", "model", name)
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	go func() {
		t := time.NewTimer(r.cfg.StopWait)
		defer t.Stop()
		for {
			r.mu.Lock()
			cur, ch := r.procs[name], r.changed
			r.mu.Unlock()
			if cur != p {
				return
			}
			select {
			case <-ch:
			case <-t.C:
				_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
				return
			}
		}
	}()
	return true
}

// Close cancels the downloads, stops every child, waits for them and
// ends every event stream.
func (r *Router) Close() {
	defer r.EndStreams()
	r.stop()
	r.mu.Lock()
	var names []string
	for n := range r.procs {
		names = append(names, n)
	}
	r.mu.Unlock()
	for _, n := range names {
		r.Unload(n)
	}
	r.wg.Wait()
}

// waitFor waits until ok holds for name's model (or it is gone).
func (r *Router) waitFor(ctx context.Context, name string, ok func(Model) bool) error {
	for {
		r.mu.Lock()
		m, found := r.fleet.Get(name)
		ch := r.changed
		r.mu.Unlock()
		if !found || ok(m) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// errCancelled is a request stopped while it waited for its model.
var errCancelled = errors.New("request cancelled while waiting for the model")

// ensure makes name loaded for a request (llama-server's
// ensure_model_ready): it loads it when a slot is free, else queues (FIFO,
// one entry per model) and, with every slot taken, gives up the least
// recently used idle model. stop reports a request given up; waited is
// whether it had to wait.
func (r *Router) ensure(ctx context.Context, name string, stop func() bool) (waited bool, err error) {
	r.mu.Lock()
	plan := r.fleet.Want(name)
	r.mu.Unlock()
	if plan.Ready {
		return false, nil
	}
	w := Waiter{Queued: plan.Queued}
	if plan.Load {
		if err := r.Load(ctx, name); err != nil {
			return true, err
		}
		w.DidLoad = true
	}
	if plan.Evict != "" {
		r.cfg.Log.Info("unloading the least recently used idle model for the queue", "model", plan.Evict, "for", name)
		r.Unload(plan.Evict)
	}
	for {
		stopped := stop() // takes mu itself
		r.mu.Lock()
		v := r.fleet.Step(name, &w, stopped)
		if v != Wait && v != Claim {
			r.fleet.Leave(name, &w)
		}
		ch := r.changed
		r.mu.Unlock()
		switch v {
		case Proceed:
			return true, nil
		case Failed:
			return true, fmt.Errorf("model %s failed to load", name)
		case Cancelled:
			return true, errCancelled
		case Claim:
			err := r.Load(context.WithoutCancel(ctx), name)
			r.mu.Lock()
			r.fleet.Claimed(name, &w, err == nil)
			r.broadcast()
			r.mu.Unlock()
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("fleet: a port for a child: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
