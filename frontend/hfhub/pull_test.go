package hfhub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// multiRepo: several quants, two projectors, a README that is never fetched.
func multiRepo() []fakeFile {
	return []fakeFile{
		{path: "README.md", data: []byte("# multi\n")},
		{path: "model-F16.gguf", data: bytesOf(3000, 1), lfs: true},
		{path: "model-Q4_K_M.gguf", data: bytesOf(2000, 2), lfs: true},
		{path: "model-Q8_0.gguf", data: bytesOf(2500, 3), lfs: true},
		{path: "mmproj-model-F16.gguf", data: bytesOf(900, 4), lfs: true},
		{path: "mmproj-model-Q8_0.gguf", data: bytesOf(500, 5), lfs: true},
	}
}

func splitRepo() []fakeFile {
	return []fakeFile{
		{path: "big-Q4_K_M-00002-of-00003.gguf", data: bytesOf(1500, 6), lfs: true},
		{path: "big-Q4_K_M-00001-of-00003.gguf", data: bytesOf(1500, 7), lfs: true},
		{path: "big-Q4_K_M-00003-of-00003.gguf", data: bytesOf(700, 8), lfs: true},
		{path: "small.gguf", data: []byte("not lfs")},
	}
}

func TestPull(t *testing.T) {
	hub := newFakeHub(t)
	hub.add("org/multi-GGUF", multiRepo()...)
	hub.add("org/split-GGUF", splitRepo()...)
	hub.add("org/private-GGUF", fakeFile{path: "p-Q8_0.gguf", data: bytesOf(100, 9), lfs: true}).private = true
	hub.add("org/docs", fakeFile{path: "README.md", data: []byte("no model")})
	evil := hub.add("org/evil-GGUF", fakeFile{path: "ok-Q4_K_M.gguf", data: bytesOf(300, 10), lfs: true})
	evil.branches = []fakeBranch{{"../../../../escaped", commitB}, {"dev", "not-a-commit"}, {"main", commitA}}
	for _, p := range []string{"../../../../escape-Q4_K_M.gguf", "/abs-Q4_K_M.gguf", "a/../../../x-Q4_K_M.gguf"} {
		evil.tree = append(evil.tree, map[string]any{"type": "file", "oid": strings.Repeat("c", 64), "size": 3, "path": p})
	}
	evil.tree = append(evil.tree, map[string]any{"type": "file", "oid": "../../x", "size": 3, "path": "bad-oid-Q4_K_M.gguf"})

	tests := []struct {
		name, ref string
		token     bool
		model     []string // the files, under the snapshot
		mmproj    string
		as        string // Model.Name
		err       error
		status    int
	}{
		{"default tag", "org/multi-GGUF", false, []string{"model-Q4_K_M.gguf"}, "mmproj-model-Q8_0.gguf", "org/multi-GGUF:Q4_K_M", nil, 0},
		{"tag in lower case", "org/multi-GGUF:f16", false, []string{"model-F16.gguf"}, "mmproj-model-F16.gguf", "org/multi-GGUF:F16", nil, 0},
		{"split model", "org/split-GGUF:Q4_K_M", false, []string{"big-Q4_K_M-00001-of-00003.gguf", "big-Q4_K_M-00002-of-00003.gguf", "big-Q4_K_M-00003-of-00003.gguf"}, "", "org/split-GGUF:Q4_K_M", nil, 0},
		{"a file without LFS, no tag in its name", "org/split-GGUF:small", false, []string{"small.gguf"}, "", "org/split-GGUF", nil, 0},
		{"no such tag", "org/multi-GGUF:Q2_K", false, nil, "", "", ErrNoGGUF, 0},
		{"no GGUF at all", "org/docs", false, nil, "", "", ErrNoGGUF, 0},
		{"missing repository", "org/missing", true, nil, "", "", ErrNotFound, 404},
		{"private, no token", "org/private-GGUF", false, nil, "", "", ErrUnauthorized, 401},
		{"private, token", "org/private-GGUF", true, []string{"p-Q8_0.gguf"}, "", "org/private-GGUF:Q8_0", nil, 0},
		{"hostile tree and branches", "org/evil-GGUF", false, []string{"ok-Q4_K_M.gguf"}, "", "org/evil-GGUF:Q4_K_M", nil, 0},
		{"path traversal in the name", "org/../etc", false, nil, "", "", ErrInvalidName, 0},
		{"traversal in the tag", "org/multi-GGUF:../../x", false, nil, "", "", ErrInvalidName, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			cache := filepath.Join(root, "cache")
			token := ""
			if tt.token {
				token = hub.token
			}
			m, err := hub.client(t, cache, token).Pull(context.Background(), tt.ref, nil)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Pull(%q) err = %v, want %v", tt.ref, err, tt.err)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Status != tt.status || !strings.Contains(err.Error(), tt.ref) {
					t.Errorf("error %v: want an *Error with status %d naming %q", err, tt.status, tt.ref)
				}
				return
			}
			repo, _, _ := strings.Cut(tt.ref, ":")
			snap := filepath.Join(cache, repoFolder(repo), "snapshots", commitA)
			var want []string
			for _, f := range tt.model {
				want = append(want, filepath.Join(snap, f))
			}
			mm := ""
			if tt.mmproj != "" {
				mm = filepath.Join(snap, tt.mmproj)
			}
			if !slices.Equal(m.Files, want) || m.Path != want[0] || m.MMProj != mm || m.Name != tt.as || m.Commit != commitA {
				t.Errorf("Pull(%q) = %+v\nwant files %v mmproj %q name %q", tt.ref, m, want, mm, tt.as)
			}
			for _, p := range append(slices.Clone(m.Files), m.MMProj) {
				if _, err := os.Stat(p); p != "" && err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			ents, _ := os.ReadDir(root)
			if len(ents) != 1 {
				t.Errorf("Pull wrote outside the cache: %v", ents)
			}
		})
	}
}

// TestPullLayout: the hub cache's layout; a second Pull fetches nothing.
func TestPullLayout(t *testing.T) {
	hub := newFakeHub(t)
	files := multiRepo()
	hub.add("org/multi-GGUF", files...)
	cache := t.TempDir()
	c := hub.client(t, cache, "")
	var reports []Progress
	m, err := c.Pull(context.Background(), "org/multi-GGUF", func(p Progress) { reports = append(reports, p) })
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(cache, "models--org--multi-GGUF")
	if b, err := os.ReadFile(filepath.Join(repo, "refs", "main")); err != nil || string(b) != commitA {
		t.Errorf("refs/main = %q, %v; want %s", b, err, commitA)
	}
	for _, f := range []fakeFile{files[2], files[5]} {
		snap := filepath.Join(repo, "snapshots", commitA, f.path)
		target, err := os.Readlink(snap)
		if err != nil || target != filepath.Join("..", "..", "blobs", f.oid()) {
			t.Errorf("%s -> %q, %v; want ../../blobs/%s", f.path, target, err, f.oid())
		}
		if b, err := os.ReadFile(snap); err != nil || string(b) != string(f.data) {
			t.Errorf("%s: content differs (%v)", f.path, err)
		}
		if hub.getsOf(f.oid()) != 1 {
			t.Errorf("%s fetched %d times, want once (through the redirect)", f.path, hub.getsOf(f.oid()))
		}
	}
	if _, err := os.Lstat(filepath.Join(repo, "snapshots", commitA, "README.md")); err == nil {
		t.Error("README.md was fetched")
	}
	if ents, _ := os.ReadDir(filepath.Join(repo, "blobs")); len(ents) != 2 {
		t.Errorf("blobs: %v, want the model and the projector", ents)
	}
	// fleet's TestRouterDownload checks that the --models-cache scanner
	// lists m.Name at m.Path (fleet imports this package: not here)

	byFile := map[string][]Progress{}
	for _, p := range reports {
		byFile[p.File] = append(byFile[p.File], p)
	}
	for _, f := range []fakeFile{files[2], files[5]} {
		ps := byFile[f.path]
		last := ps[len(ps)-1]
		if !last.Done || last.Err != nil || last.Bytes != int64(len(f.data)) || last.Total != last.Bytes || last.Cached {
			t.Errorf("%s: last report %+v", f.path, last)
		}
		if !strings.HasSuffix(last.URL, "/org/multi-GGUF/resolve/"+commitA+"/"+f.path) {
			t.Errorf("%s: URL %s", f.path, last.URL)
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].Bytes < ps[i-1].Bytes || ps[i-1].Done {
				t.Errorf("%s: reports out of order: %+v", f.path, ps)
			}
		}
	}

	reports = nil
	again, err := c.Pull(context.Background(), "org/multi-GGUF", func(p Progress) { reports = append(reports, p) })
	if err != nil || !slices.Equal(again.Files, m.Files) || again.MMProj != m.MMProj {
		t.Fatalf("second Pull = %+v, %v", again, err)
	}
	for _, p := range reports {
		if !p.Cached || !p.Done {
			t.Errorf("second Pull fetched %s: %+v", p.File, p)
		}
	}
	if hub.getsOf(files[2].oid()) != 1 {
		t.Error("second Pull fetched the model again")
	}
}

// TestPullResume: a dropped connection leaves the partial blob; the next
// Pull asks for the rest with Range. A server that ignores the Range
// restarts the file.
func TestPullResume(t *testing.T) {
	hub := newFakeHub(t)
	f := fakeFile{path: "r-Q4_K_M.gguf", data: bytesOf(3<<20+123, 11), lfs: true}
	hub.add("org/resume-GGUF", f)
	hub.cut[f.oid()] = 1<<20 + 5
	cache := t.TempDir()
	c := hub.client(t, cache, "")
	var last Progress
	_, err := c.Pull(context.Background(), "org/resume-GGUF", func(p Progress) { last = p })
	if err == nil || errors.Is(err, ErrCorrupt) || !last.Done || last.Err == nil {
		t.Fatalf("a dropped connection: err %v, last report %+v", err, last)
	}
	blob := filepath.Join(cache, "models--org--resume-GGUF", "blobs", f.oid())
	st, err := os.Stat(blob + ".incomplete")
	if err != nil || st.Size() != 1<<20+5 {
		t.Fatalf("partial blob: %v, %v; want %d bytes", st, err, 1<<20+5)
	}
	var first Progress
	m, err := c.Pull(context.Background(), "org/resume-GGUF", func(p Progress) {
		if first.File == "" {
			first = p
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.Bytes != 1<<20+5 || first.Total != int64(len(f.data)) {
		t.Errorf("resumed download's first report %+v, want it to start at %d", first, 1<<20+5)
	}
	if !slices.Equal(hub.ranges, []string{"bytes=1048581-"}) {
		t.Errorf("Range headers %q", hub.ranges)
	}
	if b, err := os.ReadFile(m.Path); err != nil || string(b) != string(f.data) {
		t.Errorf("resumed file differs (%v)", err)
	}
	if _, err := os.Stat(blob + ".incomplete"); err == nil {
		t.Error("the partial file is left")
	}
}

// TestPullCancel: cancelling ctx stops the download with ctx's error and
// keeps the partial file, which the next Pull resumes.
func TestPullCancel(t *testing.T) {
	hub := newFakeHub(t)
	f := fakeFile{path: "c-Q8_0.gguf", data: bytesOf(2<<20, 12), lfs: true}
	hub.add("org/cancel-GGUF", f)
	hub.stall[f.oid()] = 1<<20 + 10
	c := hub.client(t, t.TempDir(), "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.Pull(ctx, "org/cancel-GGUF", func(p Progress) {
		if p.Bytes >= 1<<20 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "org/cancel-GGUF") {
		t.Fatalf("cancelled Pull: %v, want context.Canceled naming the repo", err)
	}
	part := c.blobPath("org/cancel-GGUF", f.oid()) + ".incomplete"
	if st, err := os.Stat(part); err != nil || st.Size() < 1<<20 {
		t.Fatalf("partial file after cancel: %v, %v", st, err)
	}
	m, err := c.Pull(context.Background(), "org/cancel-GGUF", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(m.Path); string(b) != string(f.data) || len(hub.ranges) != 1 {
		t.Errorf("resume after cancel: content ok %v, ranges %q", string(b) == string(f.data), hub.ranges)
	}
}

// TestPullCorrupt: content that is not the LFS sha256 is refused and
// dropped; the next Pull starts over.
func TestPullCorrupt(t *testing.T) {
	hub := newFakeHub(t)
	f := fakeFile{path: "x-Q4_K_M.gguf", data: bytesOf(4000, 13), lfs: true}
	hub.add("org/corrupt-GGUF", f)
	hub.corrupt[f.oid()] = true
	cache := t.TempDir()
	c := hub.client(t, cache, "")
	_, err := c.Pull(context.Background(), "org/corrupt-GGUF", nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), f.path) {
		t.Fatalf("corrupt download: %v, want ErrCorrupt naming the file and the sha256", err)
	}
	repo := filepath.Join(cache, "models--org--corrupt-GGUF")
	for _, p := range []string{filepath.Join("blobs", f.oid()), filepath.Join("blobs", f.oid()+".incomplete"), filepath.Join("snapshots", commitA, f.path)} {
		if _, err := os.Lstat(filepath.Join(repo, p)); err == nil {
			t.Errorf("%s left after a corrupt download", p)
		}
	}
	hub.corrupt[f.oid()] = false
	if _, err := c.Pull(context.Background(), "org/corrupt-GGUF", nil); err != nil || len(hub.ranges) != 0 {
		t.Errorf("Pull after corruption: %v, ranges %q (want a fresh start)", err, hub.ranges)
	}
}

// TestPullPagesAndRangeIgnored: a tree in pages (Link: rel="next"); a
// partial file whose server answers 200 to a Range starts over.
func TestPullPagesAndRangeIgnored(t *testing.T) {
	hub := newFakeHub(t)
	hub.pageSize = 2
	hub.add("org/paged-GGUF", splitRepo()...)
	cache := t.TempDir()
	c := hub.client(t, cache, "")
	plan, err := c.Resolve(context.Background(), "org/paged-GGUF")
	if err != nil || len(plan.Model) != 3 {
		t.Fatalf("Resolve over pages: %+v, %v", plan, err)
	}
	// a stale partial of the non-LFS file, longer than the file: emptied, then fetched whole
	small := splitRepo()[3]
	snap := c.snapPath("org/paged-GGUF", commitA, small.path)
	os.MkdirAll(filepath.Dir(snap), 0o755)
	os.WriteFile(c.blobPath("org/paged-GGUF", small.oid())+".incomplete", []byte("garbage that is far too long"), 0o644)
	plan.Model = []File{{Path: small.path, OID: small.oid(), Size: int64(len(small.data))}}
	m, err := c.Download(context.Background(), plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(m.Path); string(b) != string(small.data) {
		t.Errorf("content %q, want %q", b, small.data)
	}
}

// TestPullConcurrent: two Pulls of one model fetch each blob once.
func TestPullConcurrent(t *testing.T) {
	hub := newFakeHub(t)
	hub.add("org/split-GGUF", splitRepo()...)
	c := hub.client(t, t.TempDir(), "")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = c.Pull(context.Background(), "org/split-GGUF", nil) })
	}
	wg.Wait()
	for _, f := range splitRepo()[:3] {
		if n := hub.getsOf(f.oid()); n != 1 || errs[0] != nil || errs[1] != nil {
			t.Errorf("%s fetched %d times; errors %v", f.path, n, errs)
		}
	}
}

// TestPullOffline: with the hub gone, a cached model is still found.
func TestPullOffline(t *testing.T) {
	hub := newFakeHub(t)
	hub.add("org/multi-GGUF", multiRepo()...)
	cache := t.TempDir()
	c := hub.client(t, cache, "")
	m, err := c.Pull(context.Background(), "org/multi-GGUF:Q8_0", nil)
	if err != nil {
		t.Fatal(err)
	}
	hub.srv.Close()
	again, err := c.Pull(context.Background(), "org/multi-GGUF:q8_0", nil)
	if err != nil || again.Path != m.Path || again.MMProj != m.MMProj || again.Name != m.Name {
		t.Errorf("offline Pull = %+v, %v; want %+v", again, err, m)
	}
	if _, err := c.Pull(context.Background(), "org/multi-GGUF:F16", nil); err == nil || errors.Is(err, ErrNoGGUF) {
		t.Errorf("offline Pull of an uncached tag: %v, want the network error", err)
	}
	if _, err := c.Local("org/other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Local of an uncached repo: %v", err)
	}
}
