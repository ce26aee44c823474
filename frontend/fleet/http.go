package fleet

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// Handler is the router's HTTP API: llama-server's router routes, and
// every other GET (by ?model=) and POST (by the body's "model") proxied
// to the model's child.
func (r *Router) Handler() http.Handler {
	mux := http.NewServeMux()
	health := func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) }
	mux.HandleFunc("GET /health", health)
	mux.HandleFunc("GET /v1/health", health)
	mux.HandleFunc("GET /models", r.listModels)
	mux.HandleFunc("GET /v1/models", r.listModels)
	mux.HandleFunc("POST /models/load", r.loadModel)
	mux.HandleFunc("POST /models/unload", r.unloadModel)
	mux.HandleFunc("GET /models/sse", r.modelEvents)
	mux.HandleFunc("POST /models", r.postModels)
	mux.HandleFunc("DELETE /models", r.deleteModels)
	mux.HandleFunc("GET /props", r.props)
	mux.HandleFunc("GET /v1/stream", r.streamGet)
	mux.HandleFunc("DELETE /v1/stream", r.streamDelete)
	mux.HandleFunc("POST /v1/streams/lookup", r.streamsLookup)
	mux.HandleFunc("GET /", r.proxyGet)
	mux.HandleFunc("POST /", r.proxyPost)
	if r.cfg.Edge != nil {
		return r.auth(r.cfg.Edge(mux))
	}
	return r.auth(mux)
}

// public are the routes that need no API key to GET (or HEAD), as
// llama-server's; POST and DELETE /models, which download and remove,
// need one.
var public = map[string]bool{"/health": true, "/v1/health": true, "/models": true, "/v1/models": true}

func (r *Router) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if len(r.cfg.APIKeys) == 0 || public[req.URL.Path] && (req.Method == http.MethodGet || req.Method == http.MethodHead) || req.Method == http.MethodOptions {
			next.ServeHTTP(w, req)
			return
		}
		got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok {
			got = req.Header.Get("X-Api-Key")
		}
		for _, k := range r.cfg.APIKeys {
			if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(k)) == 1 {
				next.ServeHTTP(w, req)
				return
			}
		}
		writeErr(w, openai.Unauthorized("Invalid API Key"))
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, e *openai.Error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.JSON())
}

// modelJSON is one entry of GET /models.
type modelJSON struct {
	ID           string         `json:"id"`
	Aliases      []string       `json:"aliases"`
	Tags         []string       `json:"tags"`
	Object       string         `json:"object"`
	OwnedBy      string         `json:"owned_by"`
	Created      int64          `json:"created"`
	Status       statusJSON     `json:"status"`
	Architecture map[string]any `json:"architecture"`
	Source       string         `json:"source"`
	CanRemove    bool           `json:"can_remove"`
}

type statusJSON struct {
	Value    string   `json:"value"`
	Args     []string `json:"args"`
	ExitCode *int     `json:"exit_code,omitempty"`
	Failed   bool     `json:"failed,omitempty"`
}

func (r *Router) listModels(w http.ResponseWriter, req *http.Request) {
	if req.URL.Query().Get("reload") != "" {
		if err := r.Reload(); err != nil {
			writeErr(w, openai.Internal("reloading the models: %v", err))
			return
		}
	}
	r.mu.Lock()
	all := r.fleet.List()
	r.mu.Unlock()
	now := time.Now().Unix()
	data := []modelJSON{}
	for _, m := range all {
		if m.Hidden {
			continue
		}
		st := statusJSON{Value: m.Status.String(), Args: []string{}}
		if m.Failed() {
			code := m.ExitCode
			st.ExitCode, st.Failed = &code, true
		}
		data = append(data, modelJSON{ID: m.Name, Aliases: nonNil(m.Aliases), Tags: []string{}, Object: "model", OwnedBy: "llamacpp",
			Created: now, Status: st, Source: m.Source, CanRemove: m.Source == "cache",
			Architecture: map[string]any{"input_modalities": []string{"text"}, "output_modalities": []string{"text"}}})
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": data})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// bodyModel reads a request body and its "model" field.
func bodyModel(req *http.Request) ([]byte, string, *openai.Error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, "", openai.BadRequest("", "reading the request: %v", err)
	}
	var v struct {
		Model string `json:"model"`
	}
	if len(bytes.TrimSpace(body)) > 0 && json.Unmarshal(body, &v) != nil {
		return nil, "", openai.BadRequest("", "the request body is not JSON")
	}
	return body, v.Model, nil
}

// bodyTarget reads the model a load or unload body names (an error has
// been answered when read is false) and looks it up (found).
func (r *Router) bodyTarget(w http.ResponseWriter, req *http.Request) (m Model, found, read bool) {
	_, name, e := bodyModel(req)
	if e != nil {
		writeErr(w, e)
		return Model{}, false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m, found = r.fleet.Get(name)
	return m, found, true
}

func (r *Router) loadModel(w http.ResponseWriter, req *http.Request) {
	m, ok, read := r.bodyTarget(w, req)
	if !read {
		return
	}
	switch {
	case !ok:
		writeErr(w, openai.NotFound("model", "model is not found"))
	case m.HoldsSlot():
		writeErr(w, openai.BadRequest("model", "model is already running"))
	default:
		if err := r.Load(req.Context(), m.Name); err != nil {
			writeErr(w, openai.BadRequest("model", "%v", err))
			return
		}
		writeJSON(w, 200, map[string]bool{"success": true})
	}
}

func (r *Router) unloadModel(w http.ResponseWriter, req *http.Request) {
	m, ok, read := r.bodyTarget(w, req)
	if !read {
		return
	}
	switch {
	case !ok:
		writeErr(w, openai.BadRequest("model", "model is not found"))
	case m.Status == Downloading && !m.Fetching: // unloading a download cancels it
		if err := r.cancelDownload(req.Context(), m.Name); err != nil {
			writeErr(w, loadError(err))
			return
		}
		writeJSON(w, 200, map[string]bool{"success": true})
	case !m.HoldsSlot():
		writeErr(w, openai.BadRequest("model", "model is not running"))
	default:
		r.Unload(m.Name)
		writeJSON(w, 200, map[string]bool{"success": true})
	}
}

func (r *Router) props(w http.ResponseWriter, req *http.Request) {
	if req.URL.Query().Get("model") != "" {
		r.proxyGet(w, req)
		return
	}
	writeJSON(w, 200, map[string]any{
		"role": "router", "max_instances": r.cfg.Max, "models_autoload": r.cfg.Autoload,
		"model_alias": "llama-server", "model_path": "none",
		"default_generation_settings": map[string]any{"params": map[string]any{}, "n_ctx": 0},
		"ui_settings":                 map[string]any{}, "build_info": r.cfg.BuildInfo, "cors_proxy_enabled": false,
	})
}

// autoload is the request's ?autoload=, else --no-models-autoload's.
func (r *Router) autoload(req *http.Request) bool {
	if v := req.URL.Query().Get("autoload"); v != "" {
		return v == "true" || v == "1"
	}
	return r.cfg.Autoload
}

// validate resolves name (an alias too) to a model that may serve now.
func (r *Router) validate(name string, autoload bool) (string, *openai.Error) {
	if name == "" {
		return "", openai.BadRequest("model", "model name is missing from the request")
	}
	r.mu.Lock()
	m, ok := r.fleet.Get(name)
	r.mu.Unlock()
	if !ok {
		return "", openai.BadRequest("model", "model '%s' not found", name)
	}
	if !autoload && !m.HoldsSlot() {
		return "", openai.BadRequest("model", "model is not loaded")
	}
	return m.Name, nil
}

func (r *Router) proxyGet(w http.ResponseWriter, req *http.Request) {
	name, e := r.validate(req.URL.Query().Get("model"), r.autoload(req))
	if e == nil {
		if _, err := r.ensure(req.Context(), name, func() bool { return req.Context().Err() != nil }); err != nil {
			e = loadError(err)
		}
	}
	if e != nil {
		writeErr(w, e)
		return
	}
	r.proxy(w, req, name, nil, false, false)
}

func (r *Router) proxyPost(w http.ResponseWriter, req *http.Request) {
	body, name, e := bodyModel(req)
	if e == nil {
		name, e = r.validate(name, r.autoload(req))
	}
	if e != nil {
		writeErr(w, e)
		return
	}
	// the conversation's child, remembered before the load so that a stop
	// during it cancels this request; a session request ignores its socket
	conv := req.Header.Get("X-Conversation-Id")
	r.mu.Lock()
	ticket := r.convs.Remember(conv, name)
	r.mu.Unlock()
	ctx, stop := req.Context(), func() bool { return req.Context().Err() != nil }
	if ticket != 0 {
		ctx = context.WithoutCancel(ctx)
		stop = func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return !r.convs.Alive(conv, ticket)
		}
	}
	waited, err := r.ensure(ctx, name, stop)
	if err == nil && ticket != 0 && stop() {
		err = errCancelled
	}
	if errors.Is(err, errCancelled) && ticket != 0 {
		writeErr(w, openai.BadRequest("", "request cancelled by a stop while the model was loading"))
		return
	}
	if err != nil {
		writeErr(w, loadError(err))
		return
	}
	r.proxy(w, req, name, body, true, waited && ticket != 0)
}

func loadError(err error) *openai.Error {
	if errors.Is(err, errCancelled) || errors.Is(err, context.Canceled) {
		return openai.BadRequest("", "%v", err)
	}
	return openai.Internal("%v", err)
}

// hopHeaders are not forwarded either way.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Content-Length": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Proxy-Connection": true, "Server": true}

// proxy forwards req to name's child and copies the answer back, flushing
// as it comes (event streams). A POST makes the model the most recently
// used; a detached request (a session that waited for a load) runs to
// its end even when the client has gone.
func (r *Router) proxy(w http.ResponseWriter, req *http.Request, name string, body []byte, post, detached bool) {
	r.mu.Lock()
	m, _ := r.fleet.Get(name)
	if !m.Running() {
		r.mu.Unlock()
		writeErr(w, openai.BadRequest("model", "model name=%s is not running", name))
		return
	}
	r.fleet.Acquire(name, post)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		victim := r.fleet.Release(name)
		r.broadcast()
		r.mu.Unlock()
		if victim != "" {
			r.cfg.Log.Info("model went idle, giving its slot to a queued request", "model", victim)
			r.Unload(victim)
		}
	}()
	ctx := req.Context()
	if detached {
		ctx = context.WithoutCancel(ctx)
	}
	_ = sleep(ctx, r.cfg.Delay)
	r.forward(ctx, w, req.Method, m.Port, req.URL.RequestURI(), req.Header, body, detached)
}

// forward sends one request to the child on port and relays the answer.
func (r *Router) forward(ctx context.Context, w http.ResponseWriter, method string, port int, uri string, h http.Header, body []byte, detached bool) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:"+strconv.Itoa(port)+uri, rd)
	if err != nil {
		writeErr(w, openai.Internal("%v", err))
		return
	}
	for k, vs := range h {
		if !hopHeaders[k] && k != "Accept-Encoding" {
			out.Header[k] = vs
		}
	}
	resp, err := r.client.Do(out)
	if err != nil {
		writeErr(w, openai.Internal("proxying to the model's server: %v", err))
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if !hopHeaders[k] {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				if detached { // the session still gets the whole generation
					_, _ = io.Copy(io.Discard, resp.Body)
				}
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if rerr != nil {
			return
		}
	}
}

// streamOwner is the loaded model whose child holds conversation id.
func (r *Router) streamOwner(id string) (Model, bool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, ok := r.convs.Owner(id)
	if !ok {
		return Model{}, false, false
	}
	m, ok := r.fleet.Get(name)
	if !ok {
		return Model{}, false, false
	}
	return m, m.Status == Loaded, m.Status == Loading
}

func (r *Router) streamGet(w http.ResponseWriter, req *http.Request) {
	id := req.URL.Query().Get("conv_id")
	if id == "" {
		writeErr(w, openai.BadRequest("conv_id", "Missing conversation id in path"))
		return
	}
	m, ready, loading := r.streamOwner(id)
	if !ready {
		if loading {
			writeErr(w, openai.ServiceUnavailable("Stream owner model is loading, retry later"))
		} else {
			writeErr(w, openai.NotFound("conv_id", "Stream not found or expired"))
		}
		return
	}
	uri := "/v1/stream?conv_id=" + url.QueryEscape(id)
	if from := req.URL.Query().Get("from"); from != "" {
		uri += "&from=" + url.QueryEscape(from)
	}
	r.forward(req.Context(), w, http.MethodGet, m.Port, uri, req.Header, nil, false)
}

func (r *Router) streamDelete(w http.ResponseWriter, req *http.Request) {
	id := req.URL.Query().Get("conv_id")
	if id == "" {
		writeErr(w, openai.BadRequest("conv_id", "Missing conversation id in path"))
		return
	}
	if m, ready, _ := r.streamOwner(id); ready {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		out, _ := http.NewRequestWithContext(ctx, http.MethodDelete, fmt.Sprintf("http://127.0.0.1:%d/v1/stream?conv_id=%s", m.Port, url.QueryEscape(id)), nil)
		out.Header = req.Header.Clone()
		if resp, err := r.client.Do(out); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
	}
	r.mu.Lock()
	r.convs.Forget(id) // a request parked in a load sees it and gives up
	r.broadcast()
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *Router) streamsLookup(w http.ResponseWriter, req *http.Request) {
	var in struct {
		IDs []string `json:"conversation_ids"`
	}
	agg := []json.RawMessage{}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		writeJSON(w, 200, agg)
		return
	}
	perPort := map[int][]string{}
	for _, id := range in.IDs {
		if m, ready, _ := r.streamOwner(id); ready && id != "" {
			perPort[m.Port] = append(perPort[m.Port], id)
		}
	}
	for port, ids := range perPort {
		b, _ := json.Marshal(map[string][]string{"conversation_ids": ids})
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		out, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(port)+"/v1/streams/lookup", bytes.NewReader(b))
		out.Header = req.Header.Clone()
		out.Header.Set("Content-Type", "application/json")
		out.Header.Del("Content-Length")
		if resp, err := r.client.Do(out); err == nil {
			var got []json.RawMessage
			if resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&got) == nil {
				agg = append(agg, got...)
			}
			resp.Body.Close()
		}
		cancel()
	}
	writeJSON(w, 200, agg)
}
