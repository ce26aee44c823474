package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/frontend/fleet"
	"github.com/tandem-llm/tandem/frontend/hfhub"
	"github.com/tandem-llm/tandem/frontend/server"
	"github.com/tandem-llm/tandem/frontend/servertools"
)

// routerFlags are serve's router mode (llama-server's, several models):
// with --models-dir, --models-preset, --models-cache or -hf and no model,
// serve starts no engine but one child `tandem serve` per model on demand.
type routerFlags struct {
	dir, preset, cache string
	hfRepo             string // -hf: a model repository (hfmodel.go), or a preset one read as --models-preset
	hfFile             string // -hff: the model file of -hf's repository
	hfToken            string // -hft: the hub's token ("" = $HF_TOKEN)
	hfPreset           string // -hf's preset.ini, as serveFromHub found it in the models cache
	max                int
	noAutoload         bool
	offline            bool
	delay              time.Duration
}

func (f *routerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "models-dir", "", "router mode: a `directory` of models, NAME.gguf or NAME/ holding one (served without --model, one child server per model)")
	fs.StringVar(&f.preset, "models-preset", "", "router mode: llama.cpp's INI preset `file`: [NAME] sections of options (model = PATH, hf-repo = OWNER/REPO[:TAG], downloaded when it loads if the models cache lacks it, ctx-size…; [*] applies to all); re-read on GET /models?reload=1")
	hf := "llama-server's -hf: the Hugging Face `repo` OWNER/REPO[:TAG] to serve: its GGUF for the tag (default Q4_K_M, else Q8_0, else the first; every part of a split model) is downloaded into the models cache and served as --model, named OWNER/REPO[:TAG] as given; a preset repository (preset.ini at its root) runs serve as a router over its preset (also env LLAMA_ARG_HF_REPO)"
	fs.StringVar(&f.hfRepo, "hf-repo", "", hf)
	fs.StringVar(&f.hfRepo, "hfr", "", hf)
	fs.StringVar(&f.hfRepo, "hf", "", hf)
	hff := "llama-server's -hff: the model `file` of -hf's repository, its path there, overriding the tag (also env LLAMA_ARG_HF_FILE)"
	fs.StringVar(&f.hfFile, "hf-file", "", hff)
	fs.StringVar(&f.hfFile, "hff", "", hff)
	hft := "the Hugging Face access `token` for -hf, --model OWNER/REPO and router downloads (default: $HF_TOKEN)"
	fs.StringVar(&f.hfToken, "hf-token", "", hft)
	fs.StringVar(&f.hfToken, "hft", "", hft)
	fs.StringVar(&f.cache, "models-cache", "", "a Hugging Face hub cache `directory` (models--OWNER--REPO/snapshots/REV/FILE.gguf): in router mode each GGUF is the model OWNER/REPO:TAG, and POST /models downloads into it; -hf and --model OWNER/REPO download into it too (default: llama.cpp's, $LLAMA_CACHE, $HF_HUB_CACHE, $HF_HOME/hub, else ~/.cache/huggingface/hub, listed as llama-server lists it)")
	fs.IntVar(&f.max, "models-max", 4, "router mode: models loaded at once (`N`, 0 = no limit); a load past it unloads the least recently used idle one, requests queue while none is idle")
	fs.BoolVar(&f.noAutoload, "no-models-autoload", false, "router mode: do not load a model a request names (POST /models/load does; ?autoload=1 overrides)")
	fs.BoolVar(&f.offline, "offline", false, "llama-server's: download nothing; -hf, --model OWNER/REPO and POST /models take only a model already in the models cache (also env LLAMA_ARG_OFFLINE or HF_HUB_OFFLINE)")
	fs.DurationVar(&f.delay, "models-debug-delay", 0, "router mode test hook: wait this `long` before each load and each proxied request (llama-server's LLAMA_SERVER_DEBUG_FAKE_TIMING)")
}

// on reports whether serve runs as a router: a source of models and no
// model. serveFromHub has run: -hf (or $LLAMA_ARG_HF_REPO) is still
// there without a model only when it is a preset repository.
func (f *routerFlags) on(set map[string]bool) bool {
	return !set["model"] && (f.dir != "" || f.preset != "" || f.cache != "" || f.hf() != "")
}

// hf is -hf, else $LLAMA_ARG_HF_REPO.
func (f *routerFlags) hf() string {
	if f.hfRepo != "" {
		return f.hfRepo
	}
	return os.Getenv("LLAMA_ARG_HF_REPO")
}

// routerOwnFlags are serve's flags a child does not get from the router.
var routerOwnFlags = []string{"models-dir", "models-preset", "models-cache", "models-max", "no-models-autoload", "offline", "models-debug-delay",
	"hf", "hfr", "hf-repo", "hff", "hf-file", "hft", "hf-token",
	"model", "host", "port", "config", "run-dir", "alias", "served-model-name", "reuse-port",
	// the router answers these itself (server.Edge), as llama-server's router
	"tools", "tools-runtime", "mcp-servers-json", "mcp-servers-config", "webui-mcp-proxy", "ui-mcp-proxy"}

// runRouter serves llama-server's router API on --host:--port until ctx
// ends, then stops every child.
func runRouter(ctx context.Context, sf *serveFlags, fs *flag.FlagSet, log *slog.Logger) error {
	rf, ff := &sf.router, &sf.frontend
	keys, err := readAPIKeys(ff.apiKeyFile)
	if err != nil {
		return fmt.Errorf("router: --api-key-file: %w", err)
	}
	if ff.apiKey != "" {
		keys = append(keys, strings.Split(ff.apiKey, ",")...)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("router: locating the tandem binary: %w", err)
	}
	var pass []string // the router's own command line, minus its own flags
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(routerOwnFlags, f.Name) {
			pass = append(pass, "--"+f.Name+"="+f.Value.String())
		}
	})
	known := func(name string) bool { return fs.Lookup(name) != nil && !slices.Contains(routerOwnFlags, name) }
	offline := rf.isOffline()
	hub, cache := routerHub(rf.cache, rf.hfToken, log)
	preset, err := routerPreset(ctx, rf, hub, offline, log)
	if err != nil {
		return err
	}
	command := func(s fleet.Spec, port int) ([]string, error) {
		path := s.Path
		if path != "dummy" && !filepath.IsAbs(path) && preset != "" {
			path = filepath.Join(filepath.Dir(preset), path)
		}
		argv := []string{exe, "serve", "--model", path, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--alias", s.Name}
		opts, ignored := s.Args(known)
		if len(ignored) > 0 {
			log.Warn("preset options serve does not have, ignored", "model", s.Name, "options", ignored)
		}
		return append(append(argv, pass...), opts...), nil
	}
	// The router's own routes: CORS, the tools (MCP servers listed before
	// it serves) and the CORS proxy, as llama-server's router keeps them.
	var edge server.Config
	fs.Visit(func(fl *flag.Flag) {
		ff.api.originsSet = ff.api.originsSet || fl.Name == "allowed-origins" || fl.Name == "cors-origins"
	})
	ff.api.apply(&edge)
	edge.Logger, edge.Version = log, version
	mcp := servertools.NewMCP(ff.api.mcpServers, log)
	defer mcp.Close()
	mcp.Warm(ctx)
	edge.Tools = edge.Tools.WithMCP(mcp)
	autoload := !rf.noAutoload
	r, err := fleet.NewRouter(fleet.Config{
		Edge:    func(next http.Handler) http.Handler { return server.Edge(edge, next) },
		Sources: fleet.Sources{Dir: rf.dir, Cache: cache, Preset: preset},
		Max:     rf.max, Autoload: autoload, Command: command, APIKeys: keys, Delay: rf.delay,
		BuildInfo: "b-tandem-" + version, Log: log,
		Hub: hub, Offline: offline,
	})
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	defer r.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(ff.host, strconv.Itoa(ff.port)))
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	hs := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 30 * time.Second}
	hs.RegisterOnShutdown(r.EndStreams) // /models/sse streams would hold the drain
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("router serving", "url", "http://"+ln.Addr().String(), "models_max", rf.max, "autoload", autoload)
	go r.Startup(ctx)
	select {
	case err = <-errc:
	case <-ctx.Done():
		mcp.Close() // tool calls in flight end at once, not after the drain
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hs.Shutdown(sctx)
		cancel()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	log.Info("router stopping")
	return err
}

// routerPreset is the router's --models-preset: with -hf (or
// $LLAMA_ARG_HF_REPO), the preset.ini of that preset repository,
// downloaded into the models cache (or the cached copy, offline or when
// the hub fails), which takes --models-preset's place as in
// llama-server; it is re-read from there on reload, not downloaded again.
// serve resolves it first (serveFromHub, hfPreset), so the hub is asked
// once.
func routerPreset(ctx context.Context, rf *routerFlags, hub *hfhub.Client, offline bool, log *slog.Logger) (string, error) {
	repo := rf.hf()
	if repo == "" {
		return rf.preset, nil
	}
	path := rf.hfPreset // serve resolved -hf before choosing router mode
	if path == "" {
		if hub == nil {
			return "", fmt.Errorf("router: -hf %s: no models cache to download the preset into: set --models-cache, or HOME for the default one", repo)
		}
		var err error
		if path, err = fleet.RemotePreset(ctx, hub, repo, offline); err != nil {
			return "", fmt.Errorf("router: -hf: %w", err)
		}
	}
	if rf.preset != "" {
		log.Warn("-hf's preset replaces --models-preset", "hf_repo", repo, "models_preset", rf.preset)
	}
	log.Warn("using preset.ini from a Hugging Face repository: its options run as your models' command lines, so use only a preset you trust", "hf_repo", repo, "path", path)
	return path, nil
}

// routerHub is where the router lists and downloads cached models:
// --models-cache, else the hub cache llama.cpp uses, since llama-server's
// router always lists that one and POST /models downloads into it. The
// hub is $MODEL_ENDPOINT, $HF_ENDPOINT or huggingface.co, with token
// (-hft, else $HF_TOKEN); nil (downloads refused) when there is no cache
// or the endpoint is bad.
func routerHub(flagCache, token string, log *slog.Logger) (*hfhub.Client, string) {
	cache, err := modelsCache(flagCache)
	if err != nil {
		log.Warn("router: no models cache, POST /models is refused", "err", err)
		return nil, ""
	}
	hub, err := hfhub.New(hfhub.Options{CacheDir: cache, Token: token})
	if err != nil {
		log.Warn("router: POST /models is refused", "err", err)
		return nil, cache
	}
	log.Info("router models cache", "dir", cache)
	return hub, cache
}

// modelsCache is --models-cache, else the hub cache llama.cpp uses.
func modelsCache(flagCache string) (string, error) {
	if flagCache != "" {
		return flagCache, nil
	}
	return hfhub.DefaultCacheDir()
}

// isOffline is --offline, or the environment's LLAMA_ARG_OFFLINE or
// HF_HUB_OFFLINE.
func (f *routerFlags) isOffline() bool {
	return f.offline || envTruthy("LLAMA_ARG_OFFLINE") || envTruthy("HF_HUB_OFFLINE")
}

// envTruthy reads a switch of the environment as llama.cpp and
// huggingface_hub do: 1, true, on, yes or enabled.
func envTruthy(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "on", "yes", "enabled":
		return true
	}
	return false
}
