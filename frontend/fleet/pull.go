package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tandem-llm/tandem/frontend/hfhub"
	"github.com/tandem-llm/tandem/frontend/openai"
)

// POST /models and DELETE /models, llama-server's router downloads: the
// shell runs hfhub and feeds the core (Download, Progress, Downloaded,
// Removable, Forget), which records the events.

// progressEvery is how often a download reports its progress at most, as
// llama-server's download child throttles it; a file's first and last
// reports always go out.
const progressEvery = 100 * time.Millisecond

// llamaError is an error as llama-server types it by status.
func llamaError(status int, typ, msg string) *openai.Error {
	return &openai.Error{Status: status, Type: typ, Message: msg}
}

// hubError maps a failed resolve to llama-server's error types.
func hubError(err error) *openai.Error {
	var he *hfhub.Error
	status := 0
	if errors.As(err, &he) {
		status = he.Status
	}
	switch {
	case errors.Is(err, hfhub.ErrInvalidName):
		return llamaError(400, openai.TypeInvalidRequest, "invalid HF repo format, expected <user>/<model>[:quant]")
	case errors.Is(err, hfhub.ErrNoGGUF):
		return llamaError(400, openai.TypeInvalidRequest, err.Error())
	case errors.Is(err, hfhub.ErrNotFound):
		return llamaError(404, "not_found_error", err.Error())
	case errors.Is(err, hfhub.ErrUnauthorized) && status == http.StatusForbidden:
		return llamaError(403, "permission_error", err.Error())
	case errors.Is(err, hfhub.ErrUnauthorized):
		return llamaError(401, openai.TypeAuthentication, err.Error())
	}
	return llamaError(500, openai.TypeServer, err.Error())
}

// postModels is POST /models {"model": "owner/repo[:TAG]"}: the name is
// checked and resolved on the hub now (what to fetch, or the hub's
// refusal), then the files download in the background while the model is
// listed as downloading.
func (r *Router) postModels(w http.ResponseWriter, req *http.Request) {
	_, name, e := bodyModel(req)
	if e != nil {
		writeErr(w, e)
		return
	}
	if name == "" {
		writeErr(w, llamaError(400, openai.TypeInvalidRequest, "model must be a non-empty string"))
		return
	}
	if _, err := hfhub.ParseRef(name); err != nil {
		writeErr(w, hubError(err))
		return
	}
	if r.cfg.Hub == nil {
		writeErr(w, llamaError(501, "not_supported_error", "downloading models needs a models cache: set --models-cache, or HOME for the default one"))
		return
	}
	plan, err := r.resolve(req.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	r.mu.Lock()
	if err := r.fleet.Download(name); err != nil {
		r.mu.Unlock()
		writeErr(w, llamaError(400, openai.TypeInvalidRequest, "model '"+name+"' already exists"))
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.downloads[name] = cancel
	r.wg.Add(1)
	r.broadcast()
	r.mu.Unlock()
	r.cfg.Log.Info("downloading model", "model", name)
	go r.fetch(ctx, name, plan)
	writeJSON(w, 200, map[string]bool{"success": true})
}

// resolve asks the hub what name is. Offline, or when the hub fails, a
// copy in the cache stands in (nil: nothing to fetch), as llama.cpp
// falls back to its cache.
func (r *Router) resolve(ctx context.Context, name string) (*hfhub.Plan, *openai.Error) {
	if r.cfg.Offline {
		if _, err := r.cfg.Hub.Local(name); err != nil {
			return nil, llamaError(501, "not_supported_error", "offline mode (LLAMA_ARG_OFFLINE or HF_HUB_OFFLINE): "+name+" is not in the models cache and cannot be downloaded")
		}
		return nil, nil
	}
	plan, err := r.cfg.Hub.Resolve(ctx, name)
	if err == nil {
		return &plan, nil
	}
	if !errors.Is(err, hfhub.ErrInvalidName) && ctx.Err() == nil {
		if _, lerr := r.cfg.Hub.Local(name); lerr == nil {
			r.cfg.Log.Warn("the hub failed, using the cached copy", "model", name, "err", err)
			return nil, nil
		}
	}
	return nil, hubError(err)
}

// fetch downloads plan (nil: nothing to fetch) for the model name, feeds
// its progress to the core, and at its end reloads the catalog so that
// the cache's model replaces the download's entry.
func (r *Router) fetch(ctx context.Context, name string, plan *hfhub.Plan) {
	defer r.wg.Done()
	var err error
	if plan != nil {
		_, err = r.cfg.Hub.Download(ctx, *plan, r.progress(name))
	}
	if err != nil {
		r.cfg.Log.Warn("download failed", "model", name, "err", err)
	} else {
		r.cfg.Log.Info("model downloaded", "model", name)
	}
	end := func() {
		delete(r.downloads, name)
		r.fleet.Downloaded(name, err == nil)
	}
	if r.ctx.Err() != nil { // the router is closing: no reload
		r.mu.Lock()
		end()
		r.broadcast()
		r.mu.Unlock()
		return
	}
	if rerr := r.reload(end); rerr != nil {
		r.cfg.Log.Error("reloading the models after a download", "model", name, "err", rerr)
	}
}

// progress feeds a download's reports for the model name to the core,
// throttled to one per progressEvery (a file's first and last always go).
func (r *Router) progress(name string) func(hfhub.Progress) {
	var last time.Time
	seen := map[string]bool{}
	return func(p hfhub.Progress) { // hfhub never calls it concurrently
		now := time.Now()
		if seen[p.URL] && !p.Done && now.Sub(last) < progressEvery {
			return
		}
		seen[p.URL], last = true, now
		r.mu.Lock()
		r.fleet.Progress(name, p.URL, p.Bytes, p.Total)
		r.broadcast()
		r.mu.Unlock()
	}
}

// startFetch begins the download of repo that the load of name needs
// (the core marked it fetching); the caller holds mu.
func (r *Router) startFetch(name, repo string) {
	ctx, cancel := context.WithCancel(r.ctx)
	r.downloads[name] = cancel
	r.wg.Add(1)
	r.cfg.Log.Info("downloading the model of a load", "model", name, "hf_repo", repo)
	go r.fetchLoad(ctx, name, repo)
}

// fetchLoad downloads repo into the cache (the hub's copy, else the
// cache's own when the hub fails, as Pull does), then starts name's
// child; a failed download fails the load.
func (r *Router) fetchLoad(ctx context.Context, name, repo string) {
	defer r.wg.Done()
	m, err := r.cfg.Hub.Pull(ctx, repo, r.progress(name))
	if err == nil && m.Path == "" {
		err = fmt.Errorf("hf-repo %s is a preset repository, not a model", repo)
	}
	port := 0
	if err == nil {
		port, err = freePort()
	}
	if err != nil {
		r.cfg.Log.Warn("the model of a load failed to download", "model", name, "hf_repo", repo, "err", err)
		m.Path = ""
	} else {
		r.cfg.Log.Info("model downloaded, loading it", "model", name, "path", m.Path)
	}
	r.mu.Lock()
	delete(r.downloads, name)
	start := r.fleet.Fetched(name, m.Path, port, r.names[name])
	cur, _ := r.fleet.Get(name)
	r.broadcast()
	r.mu.Unlock()
	if start {
		r.spawn(cur.Spec, port)
	}
}

// deleteModels is DELETE /models?model=NAME: a cache model's download is
// cancelled or its child stopped, then its files leave the cache and the
// model the list.
func (r *Router) deleteModels(w http.ResponseWriter, req *http.Request) {
	name := req.URL.Query().Get("model")
	if name == "" {
		writeErr(w, llamaError(400, openai.TypeInvalidRequest, "model must be a non-empty string"))
		return
	}
	r.mu.Lock()
	_, err := r.fleet.Removable(name)
	r.mu.Unlock()
	if err != nil {
		writeErr(w, llamaError(500, openai.TypeServer, "model name="+name+" "+err.Error()))
		return
	}
	for {
		r.mu.Lock()
		m, _ := r.fleet.Removable(name)
		if r.forget(name) {
			r.mu.Unlock()
			break
		}
		cancel, ch := r.downloads[name], r.changed
		r.mu.Unlock()
		switch {
		case m.Status == Downloading && cancel != nil:
			r.cfg.Log.Info("cancelling download", "model", name)
			cancel()
		case m.HoldsSlot() && !m.Stopping:
			r.Unload(name)
		}
		select {
		case <-ch:
		case <-req.Context().Done():
			return
		}
	}
	writeJSON(w, 200, map[string]bool{"success": true})
}

// forget drops name once it is idle and removes its files, holding mu
// (the caller's) throughout so that no load starts in between, as
// llama-server holds its lock; false while name still runs or downloads.
func (r *Router) forget(name string) bool {
	if !r.fleet.Forget(name) {
		return false
	}
	if r.cfg.Hub != nil {
		if err := r.cfg.Hub.Remove(name); err != nil {
			r.cfg.Log.Warn("removing the model's files", "model", name, "err", err) // a cancelled download may have none
		}
	}
	delete(r.names, name)
	r.broadcast()
	r.cfg.Log.Info("model removed", "model", name)
	return true
}

// cancelDownload is POST /models/unload of a downloading model: it stops
// the download and waits for its end.
func (r *Router) cancelDownload(ctx context.Context, name string) error {
	r.mu.Lock()
	cancel := r.downloads[name]
	r.mu.Unlock()
	if cancel != nil {
		r.cfg.Log.Info("cancelling download", "model", name)
		cancel()
	}
	return r.waitFor(ctx, name, func(m Model) bool { return m.Status != Downloading })
}

// ErrNotPreset is a -hf repository without a preset.ini at its root.
var ErrNotPreset = errors.New("not a preset repository (no preset.ini at its root)")

// RemotePreset makes the preset.ini of the hub's preset repository name
// ("owner/repo[:TAG]", llama-server's -hf in router mode) available in
// hub's cache and returns its path: resolved on the hub and downloaded,
// or, offline or when the hub fails, the copy the cache holds. A
// repository without one is ErrNotPreset, found before anything is
// fetched.
func RemotePreset(ctx context.Context, hub *hfhub.Client, name string, offline bool) (string, error) {
	local := func() (string, error) {
		m, err := hub.Local(name)
		if err == nil && m.Preset == "" {
			err = fmt.Errorf("%s: %w", name, ErrNotPreset)
		}
		return m.Preset, err
	}
	if offline {
		return local()
	}
	plan, err := hub.Resolve(ctx, name)
	if err != nil {
		if errors.Is(err, hfhub.ErrInvalidName) || ctx.Err() != nil {
			return "", err
		}
		if p, lerr := local(); lerr == nil {
			return p, nil
		}
		return "", err
	}
	if plan.Preset == nil {
		return "", fmt.Errorf("%s: %w", name, ErrNotPreset)
	}
	m, err := hub.Download(ctx, plan, nil)
	return m.Preset, err
}
