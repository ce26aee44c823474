package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/frontend/hfhub"
)

// Models of the Hugging Face hub, served as one model: llama-server's
// `-hf OWNER/REPO[:TAG]` (with -hff FILE, -hft TOKEN) and vLLM's
// `serve OWNER/REPO`. Before serve picks its mode, serveFromHub downloads
// what they name into the models cache (--models-cache, else llama.cpp's)
// and sets --model to it, so serve runs exactly as with --model PATH. A
// preset repository (preset.ini at its root) is left to router mode.

// hubRequest is what serve's flags ask of the hub.
type hubRequest struct {
	flag       string // "-hf" or "--model", for messages
	name       string // OWNER/REPO[:TAG], also the served name
	file       string // -hff: the model file, overriding the tag
	checkpoint bool   // --model OWNER/REPO: a safetensors checkpoint first, as vLLM downloads it, else a GGUF
}

// hubWanted reads serve's flags: -hf (else $LLAMA_ARG_HF_REPO when there
// is no --model) with -hff (else $LLAMA_ARG_HF_FILE), or a --model that
// is no local path but reads as a repository id. ok is false when
// nothing comes from the hub. stat is os.Stat in serve.
func hubWanted(rf *routerFlags, model string, set map[string]bool, getenv func(string) string, stat func(string) (fs.FileInfo, error)) (r hubRequest, ok bool, err error) {
	onLine := set["hf"] || set["hfr"] || set["hf-repo"]
	file := rf.hfFile
	if file == "" {
		file = getenv("LLAMA_ARG_HF_FILE")
	}
	switch {
	case onLine && set["model"]:
		return r, false, errors.New("serve: -hf and --model: give one")
	case onLine || !set["model"] && getenv("LLAMA_ARG_HF_REPO") != "":
		name := rf.hfRepo
		if !onLine {
			name = getenv("LLAMA_ARG_HF_REPO")
		}
		return hubRequest{flag: "-hf", name: name, file: file}, true, nil
	case set["hf-file"] || set["hff"]:
		return r, false, errors.New("serve: -hff names a file of the -hf repository: give -hf too")
	case !set["model"] || model == "dummy" || strings.HasSuffix(model, ".gguf"):
		return r, false, nil
	}
	if _, err := stat(model); !errors.Is(err, fs.ErrNotExist) {
		return r, false, nil // a local path (or one that fails otherwise: the loader says how)
	}
	ref, err := hfhub.ParseRef(model)
	if err != nil {
		return r, false, nil // no repository id: the loader reports the missing path
	}
	return hubRequest{flag: "--model", name: model, checkpoint: ref.Tag == ""}, true, nil
}

// serveFromHub resolves and downloads the hub's model that serve's flags
// name, then sets --model to it and, unless --served-model-name or
// --alias is given, --served-model-name to the name as given (llama-server
// names an -hf model "OWNER/REPO[:TAG]", vLLM a model its --model). A
// preset repository sets neither: serve then runs as a router, whose -hf
// reads its preset.ini.
func serveFromHub(ctx context.Context, sf *serveFlags, fset *flag.FlagSet, set map[string]bool, log *slog.Logger) error {
	rf := &sf.router
	req, ok, err := hubWanted(rf, sf.engine.model, set, os.Getenv, os.Stat)
	if err != nil || !ok {
		return err
	}
	hub, err := newServeHub(rf)
	if err != nil {
		return fmt.Errorf("serve: %s %s: %w", req.flag, req.name, err)
	}
	offline := rf.isOffline()
	log.Info("resolving a model of the Hugging Face hub", "flag", req.flag, "repo", req.name, "file", req.file, "models_cache", hub.CacheDir(), "offline", offline)
	m, err := pullHub(ctx, hub, req, offline, downloadLog(log))
	if err != nil {
		return fmt.Errorf("serve: %s %s: %w", req.flag, req.name, hubHint(err, offline, hub.CacheDir()))
	}
	if m.Preset != "" {
		if req.flag != "-hf" {
			return fmt.Errorf("serve: --model %s is a preset repository (preset.ini at its root): serve it with -hf, as a router", req.name)
		}
		rf.hfPreset = m.Preset // router mode reads it (routerPreset)
		return nil
	}
	if err := fset.Set("model", m.Path); err != nil {
		return err
	}
	set["model"] = true
	if !set["served-model-name"] && !set["alias"] {
		if err := fset.Set("served-model-name", req.name); err != nil {
			return err
		}
		set["served-model-name"] = true
	}
	log.Info("serving a model of the Hugging Face hub", "model", req.name, "path", m.Path)
	return nil
}

// newServeHub is the hub client of -hf and --model OWNER/REPO: the models
// cache, the token of -hft (else $HF_TOKEN); no projector, which serve
// does not load.
func newServeHub(rf *routerFlags) (*hfhub.Client, error) {
	cache, err := modelsCache(rf.cache)
	if err != nil {
		return nil, err
	}
	return hfhub.New(hfhub.Options{CacheDir: cache, Token: rf.hfToken, NoMMProj: true})
}

// pullHub brings req's model into the cache (offline: finds it there). A
// checkpoint request takes the repository's safetensors checkpoint, and
// its GGUF when it has none.
func pullHub(ctx context.Context, hub *hfhub.Client, req hubRequest, offline bool, progress func(hfhub.Progress)) (hfhub.Model, error) {
	if req.checkpoint {
		var m hfhub.Model
		var err error
		if offline {
			m, err = hub.LocalCheckpoint(req.name)
		} else {
			m, err = hub.PullCheckpoint(ctx, req.name, progress)
		}
		if err == nil || !errors.Is(err, hfhub.ErrNoCheckpoint) && !(offline && errors.Is(err, hfhub.ErrNotFound)) {
			return m, err
		}
	}
	if offline {
		return hub.LocalFile(req.name, req.file)
	}
	return hub.PullFile(ctx, req.name, req.file, progress)
}

// hubHint adds what to do to a failure the user can fix.
func hubHint(err error, offline bool, cache string) error {
	switch {
	case offline && (errors.Is(err, hfhub.ErrNotFound) || errors.Is(err, hfhub.ErrNoGGUF) || errors.Is(err, hfhub.ErrNoCheckpoint)):
		return fmt.Errorf("offline mode (--offline, LLAMA_ARG_OFFLINE or HF_HUB_OFFLINE) downloads nothing, and the models cache %s lacks it: %w", cache, err)
	case errors.Is(err, hfhub.ErrUnauthorized):
		return fmt.Errorf("%w (a private or gated repository needs a token with access: --hf-token or HF_TOKEN)", err)
	}
	return err
}

// downloadEvery is how often a file's download progress is logged.
const downloadEvery = 2 * time.Second

// downloadLog logs a download's progress on serve's log: each file when
// it starts, every downloadEvery and when it is done.
func downloadLog(log *slog.Logger) func(hfhub.Progress) {
	last := map[string]time.Time{}
	return func(p hfhub.Progress) { // hfhub never calls it concurrently
		mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
		switch {
		case p.Done && p.Cached:
			log.Info("in the models cache", "file", p.File, "size", mib(p.Bytes))
		case p.Done && p.Err == nil:
			log.Info("downloaded", "file", p.File, "size", mib(p.Bytes))
		case p.Done: // the caller reports the error
		case time.Since(last[p.File]) >= downloadEvery:
			last[p.File] = time.Now()
			attrs := []any{"file", p.File, "done", mib(p.Bytes)}
			if p.Total > 0 {
				attrs = append(attrs, "of", mib(p.Total), "percent", fmt.Sprintf("%.0f", 100*float64(p.Bytes)/float64(p.Total)))
			}
			log.Info("downloading", attrs...)
		}
	}
}
