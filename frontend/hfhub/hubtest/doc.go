// Package hubtest is a fake Hugging Face hub for tests, as net/http's
// httptest is a fake server: it answers, in the hub's JSON shapes, the
// endpoints that package hfhub calls,
//
//	GET /api/models/{owner}/{repo}/refs
//	GET /api/models/{owner}/{repo}/tree/{commit}?recursive=true
//	GET /{owner}/{repo}/resolve/{commit}/{path...}   (Range served)
//
// for repositories whose main branch is at Commit. A GGUF is listed as an
// LFS file (its sha256 the oid), as the hub lists GGUFs; other files as
// plain git files (the git blob id). A missing repository is a 404, a
// private one (Private) a 401; a stalled file (Stall) sends half of its
// bytes, then waits until its client leaves.
//
//	hub := hubtest.New(t)
//	hub.Add("owner/repo", map[string][]byte{"m-Q8_0.gguf": data})
//	c, err := hfhub.New(hfhub.Options{Endpoint: hub.URL, CacheDir: dir})
package hubtest
