package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Commit is the commit every repository's main branch is at.
var Commit = strings.Repeat("7e", 20)

// Hub is a running fake hub; URL is its endpoint.
type Hub struct {
	*httptest.Server

	mu      sync.Mutex
	repos   map[string]map[string][]byte // by OWNER/REPO, then path
	private map[string]bool
	stall   map[string]bool // by path in the repository
}

// New starts a hub with no repositories, closed when t ends.
func New(t testing.TB) *Hub {
	h := &Hub{repos: map[string]map[string][]byte{}, private: map[string]bool{}, stall: map[string]bool{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// Add sets repository repo (OWNER/REPO) to files, by path.
func (h *Hub) Add(repo string, files map[string][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repo] = files
}

// Private makes repo answer 401, as a private repository without a token.
func (h *Hub) Private(repo string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.private[repo] = on
}

// Stall makes the file at path (in any repository) send half its bytes,
// then wait until its client leaves.
func (h *Hub) Stall(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stall[path] = true
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	api := strings.HasPrefix(p, "/api/models/")
	seg := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(p, "/api/models"), "/"), "/", 5)
	if r.Method != http.MethodGet || len(seg) < 3 {
		fail(w, http.StatusNotFound, "not found")
		return
	}
	repo := seg[0] + "/" + seg[1]
	h.mu.Lock()
	files, ok := h.repos[repo]
	private := h.private[repo]
	h.mu.Unlock()
	switch {
	case private:
		fail(w, http.StatusUnauthorized, "Invalid username or password.")
	case !ok:
		fail(w, http.StatusNotFound, "Repository not found")
	case api && seg[2] == "refs" && len(seg) == 3:
		_ = json.NewEncoder(w).Encode(map[string]any{"branches": []map[string]string{
			{"name": "main", "ref": "refs/heads/main", "targetCommit": Commit}}, "converts": []any{}, "tags": []any{}})
	case api && seg[2] == "tree" && len(seg) == 4 && seg[3] == Commit:
		_ = json.NewEncoder(w).Encode(tree(files))
	case !api && seg[2] == "resolve" && len(seg) == 5 && seg[3] == Commit:
		h.content(w, r, files, seg[4])
	default:
		fail(w, http.StatusNotFound, "Entry not found")
	}
}

// tree is a repository's recursive tree listing.
func tree(files map[string][]byte) []map[string]any {
	out := []map[string]any{}
	for path, data := range files {
		e := map[string]any{"type": "file", "size": len(data), "path": path,
			"oid": fmt.Sprintf("%x", sha1.Sum(fmt.Appendf(nil, "blob %d\x00%s", len(data), data)))}
		if strings.HasSuffix(path, ".gguf") {
			sum := sha256.Sum256(data)
			e["lfs"] = map[string]any{"oid": hex.EncodeToString(sum[:]), "size": len(data), "pointerSize": 134}
		}
		out = append(out, e)
	}
	return out
}

func (h *Hub) content(w http.ResponseWriter, r *http.Request, files map[string][]byte, path string) {
	data, ok := files[path]
	if !ok {
		fail(w, http.StatusNotFound, path+" does not exist")
		return
	}
	h.mu.Lock()
	stall := h.stall[path]
	h.mu.Unlock()
	if !stall {
		http.ServeContent(w, r, path, time.Time{}, bytes.NewReader(data))
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data[:len(data)/2])
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}
