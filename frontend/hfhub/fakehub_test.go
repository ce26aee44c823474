package hfhub

import (
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
)

// fakeHub answers the Hugging Face Hub's endpoints that Client uses, with
// the hub's JSON shapes:
//
//	GET /api/models/{owner}/{repo}/refs
//	GET /api/models/{owner}/{repo}/tree/{commit}?recursive=true[&cursor=N]
//	GET /{owner}/{repo}/resolve/{commit}/{path...}   LFS files: 302 to /cdn/{sha256}
//	GET /cdn/{oid}                                   Range: bytes=N- honoured
type fakeHub struct {
	srv      *httptest.Server
	token    string // what private repositories want
	pageSize int    // tree entries per page; 0 = one page

	mu      sync.Mutex
	repos   map[string]*fakeRepo
	blobs   map[string][]byte // by oid
	gets    map[string]int    // content requests by oid
	ranges  []string          // Range headers of content requests
	cut     map[string]int64  // oid → drop the connection after this many bytes, once
	stall   map[string]int64  // oid → stop after this many bytes until the client leaves, once
	corrupt map[string]bool   // oid → serve one byte flipped
}

type fakeRepo struct {
	private  bool
	branches []fakeBranch
	files    []fakeFile
	tree     []map[string]any // extra raw entries (directories, hostile paths)
}

type fakeBranch struct{ name, commit string }

type fakeFile struct {
	path string
	data []byte
	lfs  bool
}

func (f fakeFile) oid() string {
	if f.lfs {
		s := sha256.Sum256(f.data)
		return hex.EncodeToString(s[:])
	}
	s := sha1.Sum(fmt.Appendf(nil, "blob %d\x00%s", len(f.data), f.data)) // git's blob id
	return hex.EncodeToString(s[:])
}

// commitA and commitB are commits of the fake repositories.
var (
	commitA = strings.Repeat("a1", 20)
	commitB = strings.Repeat("b2", 20)
)

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{
		token: "hf_" + strings.Repeat("x", 34),
		repos: map[string]*fakeRepo{}, blobs: map[string][]byte{}, gets: map[string]int{},
		cut: map[string]int64{}, stall: map[string]int64{}, corrupt: map[string]bool{},
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// add makes repo, its main branch at commitA holding files.
func (h *fakeHub) add(repo string, files ...fakeFile) *fakeRepo {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &fakeRepo{branches: []fakeBranch{{"main", commitA}}, files: files}
	h.repos[repo] = r
	for _, f := range files {
		h.blobs[f.oid()] = f.data
	}
	return r
}

func (h *fakeHub) client(t *testing.T, dir string, token string) *Client {
	t.Helper()
	c, err := New(Options{Endpoint: h.srv.URL, Token: token, CacheDir: dir, HTTP: h.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *fakeHub) getsOf(oid string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets[oid]
}

func hubFail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Error-Code", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		hubFail(w, 405, "", "method not allowed")
		return
	}
	p := r.URL.Path
	if oid, ok := strings.CutPrefix(p, "/cdn/"); ok {
		h.content(w, r, oid)
		return
	}
	api := strings.HasPrefix(p, "/api/models/")
	seg := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(p, "/api/models"), "/"), "/", 5)
	if len(seg) < 3 {
		hubFail(w, 404, "EntryNotFound", "not found")
		return
	}
	h.mu.Lock()
	repo, ok := h.repos[seg[0]+"/"+seg[1]]
	h.mu.Unlock()
	switch {
	case !ok && r.Header.Get("Authorization") == "":
		hubFail(w, 401, "RepoNotFound", "Invalid username or password.") // as the hub hides what it lacks
		return
	case !ok:
		hubFail(w, 404, "RepoNotFound", "Repository not found")
		return
	case repo.private && r.Header.Get("Authorization") != "Bearer "+h.token:
		hubFail(w, 401, "RepoNotFound", "Invalid username or password.")
		return
	}
	switch {
	case api && seg[2] == "refs" && len(seg) == 3:
		h.refs(w, repo)
	case api && seg[2] == "tree" && len(seg) == 4:
		h.tree(w, r, repo, seg[0]+"/"+seg[1], seg[3])
	case !api && seg[2] == "resolve" && len(seg) == 5:
		h.resolve(w, r, repo, seg[3], seg[4])
	default:
		hubFail(w, 404, "EntryNotFound", "not found")
	}
}

func (h *fakeHub) refs(w http.ResponseWriter, repo *fakeRepo) {
	var branches []map[string]string
	for _, b := range repo.branches {
		branches = append(branches, map[string]string{"name": b.name, "ref": "refs/heads/" + b.name, "targetCommit": b.commit})
	}
	json.NewEncoder(w).Encode(map[string]any{"branches": branches, "converts": []any{}, "tags": []any{}})
}

func (repo *fakeRepo) has(commit string) bool {
	for _, b := range repo.branches {
		if b.commit == commit {
			return true
		}
	}
	return false
}

func (h *fakeHub) tree(w http.ResponseWriter, r *http.Request, repo *fakeRepo, name, commit string) {
	if !repo.has(commit) {
		hubFail(w, 404, "RevisionNotFound", "Invalid rev id: "+commit)
		return
	}
	if r.URL.Query().Get("recursive") != "true" {
		hubFail(w, 400, "", "want recursive=true")
		return
	}
	entries := []map[string]any{}
	dirs := map[string]bool{}
	for _, f := range repo.files {
		if i := strings.LastIndex(f.path, "/"); i > 0 && !dirs[f.path[:i]] {
			dirs[f.path[:i]] = true
			entries = append(entries, map[string]any{"type": "directory", "oid": strings.Repeat("d", 40), "size": 0, "path": f.path[:i]})
		}
		e := map[string]any{"type": "file", "oid": f.oid(), "size": len(f.data), "path": f.path}
		if f.lfs {
			e["oid"] = fakeFile{data: f.data}.oid() // the git pointer's id
			e["lfs"] = map[string]any{"oid": f.oid(), "size": len(f.data), "pointerSize": 134}
		}
		entries = append(entries, e)
	}
	entries = append(entries, repo.tree...)
	if h.pageSize > 0 {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		to := min(from+h.pageSize, len(entries))
		if to < len(entries) {
			w.Header().Set("Link", fmt.Sprintf(`<%s/api/models/%s/tree/%s?recursive=true&cursor=%d>; rel="next"`, h.srv.URL, name, commit, to))
		}
		entries = entries[from:to]
	}
	json.NewEncoder(w).Encode(entries)
}

func (h *fakeHub) resolve(w http.ResponseWriter, r *http.Request, repo *fakeRepo, commit, path string) {
	if !repo.has(commit) {
		hubFail(w, 404, "RevisionNotFound", "Invalid rev id: "+commit)
		return
	}
	for _, f := range repo.files {
		if f.path != path {
			continue
		}
		if f.lfs {
			http.Redirect(w, r, "/cdn/"+f.oid()+"?X-Amz-Signature=fake", http.StatusFound)
		} else {
			h.content(w, r, f.oid())
		}
		return
	}
	hubFail(w, 404, "EntryNotFound", path+" does not exist on \"main\"")
}

// content serves a blob, from the offset a "bytes=N-" Range asks.
func (h *fakeHub) content(w http.ResponseWriter, r *http.Request, oid string) {
	h.mu.Lock()
	data, ok := h.blobs[oid]
	h.gets[oid]++
	rng := r.Header.Get("Range")
	if rng != "" {
		h.ranges = append(h.ranges, rng)
	}
	cut, stall, corrupt := h.cut[oid], h.stall[oid], h.corrupt[oid]
	delete(h.cut, oid)
	delete(h.stall, oid)
	h.mu.Unlock()
	if !ok {
		hubFail(w, 404, "EntryNotFound", "no such blob")
		return
	}
	if corrupt {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0xff
	}
	off := int64(0)
	if s, ok := strings.CutPrefix(rng, "bytes="); ok {
		off, _ = strconv.ParseInt(strings.TrimSuffix(s, "-"), 10, 64)
		if off >= int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, len(data)-1, len(data)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)-int(off)))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("ETag", `"`+oid+`"`)
	if rng != "" {
		w.WriteHeader(http.StatusPartialContent)
	}
	body := data[off:]
	switch {
	case cut > 0:
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-body
	case stall > 0:
		w.Write(body[:stall])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until the client gives up
		return
	}
	w.Write(body)
}

// bytesOf is n deterministic bytes.
func bytesOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}
