package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeHub answers the Hugging Face Hub's endpoints that hfhub calls, in
// the hub's JSON shapes, for repositories whose main branch is at
// hubCommit:
//
//	GET /api/models/{owner}/{repo}/refs
//	GET /api/models/{owner}/{repo}/tree/{commit}?recursive=true
//	GET /{owner}/{repo}/resolve/{commit}/{path...}
//
// A missing repository is a 404, a private one a 401. A stalled file
// sends half its bytes, then waits until its client leaves.
type fakeHub struct {
	srv *httptest.Server

	mu      sync.Mutex
	repos   map[string][]hubFile
	private map[string]bool
	stall   map[string]bool // by path in the repository
}

type hubFile struct {
	path string
	data []byte
}

func (f hubFile) sha256() string {
	s := sha256.Sum256(f.data)
	return hex.EncodeToString(s[:])
}

var hubCommit = strings.Repeat("c0", 20)

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{repos: map[string][]hubFile{}, private: map[string]bool{}, stall: map[string]bool{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHub) add(repo string, files ...hubFile) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repo] = files
}

func hubFail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	api := strings.HasPrefix(p, "/api/models/")
	seg := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(p, "/api/models"), "/"), "/", 5)
	if r.Method != http.MethodGet || len(seg) < 3 {
		hubFail(w, 404, "not found")
		return
	}
	repo := seg[0] + "/" + seg[1]
	h.mu.Lock()
	files, ok := h.repos[repo]
	private := h.private[repo]
	h.mu.Unlock()
	switch {
	case private:
		hubFail(w, 401, "Invalid username or password.")
	case !ok:
		hubFail(w, 404, "Repository not found")
	case api && seg[2] == "refs" && len(seg) == 3:
		_ = json.NewEncoder(w).Encode(map[string]any{"branches": []map[string]string{
			{"name": "main", "ref": "refs/heads/main", "targetCommit": hubCommit}}, "converts": []any{}, "tags": []any{}})
	case api && seg[2] == "tree" && len(seg) == 4 && seg[3] == hubCommit:
		entries := []map[string]any{}
		for _, f := range files {
			entries = append(entries, map[string]any{"type": "file", "oid": strings.Repeat("e", 40), "size": len(f.data), "path": f.path,
				"lfs": map[string]any{"oid": f.sha256(), "size": len(f.data), "pointerSize": 134}})
		}
		_ = json.NewEncoder(w).Encode(entries)
	case !api && seg[2] == "resolve" && len(seg) == 5 && seg[3] == hubCommit:
		h.content(w, r, files, seg[4])
	default:
		hubFail(w, 404, "Entry not found")
	}
}

func (h *fakeHub) content(w http.ResponseWriter, r *http.Request, files []hubFile, path string) {
	for _, f := range files {
		if f.path != path {
			continue
		}
		h.mu.Lock()
		stall := h.stall[path]
		h.mu.Unlock()
		w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
		if !stall {
			_, _ = w.Write(f.data)
			return
		}
		_, _ = w.Write(f.data[:len(f.data)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	hubFail(w, 404, path+" does not exist")
}
