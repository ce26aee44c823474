package hfhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Options configure a Client; the zero value reads the environment as
// llama.cpp does.
type Options struct {
	Endpoint string       // the hub; "" = $MODEL_ENDPOINT, else $HF_ENDPOINT, else https://huggingface.co/
	Token    string       // sent as "Authorization: Bearer"; "" = $HF_TOKEN
	HTTP     *http.Client // nil = http.DefaultClient (redirects followed, no timeout: ctx bounds a call)
	CacheDir string       // the hub cache; "" = DefaultCacheDir()
	Parallel int          // files fetched at once; 0 = 4
	NoMMProj bool         // do not fetch a projector with the model (llama-server's --no-mmproj)
}

// Client resolves and downloads models of one hub into one cache. It is
// safe for concurrent use; two downloads of one blob wait for each other.
type Client struct {
	endpoint string   // ends in '/'
	host     *url.URL // the endpoint's scheme and host: API pages may not leave them
	token    string
	http     *http.Client
	dir      string
	parallel int
	noMMProj bool
	locks    keyLocks
}

// New makes a Client, filling what Options leave empty from the
// environment.
func New(o Options) (*Client, error) {
	c := &Client{endpoint: o.Endpoint, token: o.Token, http: o.HTTP, dir: o.CacheDir, parallel: o.Parallel, noMMProj: o.NoMMProj}
	if c.endpoint == "" {
		c.endpoint = endpointFrom(os.Getenv)
	}
	u, err := url.Parse(c.endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hfhub: endpoint %q: want an http(s) URL", c.endpoint)
	}
	c.host = &url.URL{Scheme: u.Scheme, Host: u.Host}
	if !strings.HasSuffix(c.endpoint, "/") {
		c.endpoint += "/"
	}
	if c.token == "" {
		c.token = os.Getenv("HF_TOKEN")
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.dir == "" {
		dir, err := cacheDirFrom(os.Getenv)
		if err != nil {
			return nil, err
		}
		c.dir = dir
	}
	if c.parallel <= 0 {
		c.parallel = 4
	}
	return c, nil
}

// CacheDir is the hub cache the Client writes.
func (c *Client) CacheDir() string { return c.dir }

// endpointFrom is llama.cpp's common_get_model_endpoint.
func endpointFrom(getenv func(string) string) string {
	e := getenv("MODEL_ENDPOINT")
	if e == "" {
		e = getenv("HF_ENDPOINT")
	}
	if e == "" {
		return "https://huggingface.co/"
	}
	if !strings.HasSuffix(e, "/") {
		e += "/"
	}
	return e
}

// DefaultCacheDir is the cache llama.cpp uses: $LLAMA_CACHE,
// $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func DefaultCacheDir() (string, error) { return cacheDirFrom(os.Getenv) }

func cacheDirFrom(getenv func(string) string) (string, error) {
	for _, e := range []struct{ env, sub string }{
		{"LLAMA_CACHE", ""},
		{"HF_HUB_CACHE", ""},
		{"HUGGINGFACE_HUB_CACHE", ""},
		{"HF_HOME", "hub"},
		{"XDG_CACHE_HOME", filepath.Join("huggingface", "hub")},
		{"HOME", filepath.Join(".cache", "huggingface", "hub")},
	} {
		if v := getenv(e.env); v != "" {
			return filepath.Join(v, e.sub), nil
		}
	}
	return "", errors.New("hfhub: no cache directory: set HF_HUB_CACHE or HOME")
}

// Plan is what Download fetches for a name: files of one commit.
type Plan struct {
	Ref    Ref
	Branch string // the branch Commit was read from: "main" when the repository has one
	Commit string
	Model  []File // the model's file, or every part of a split model, first part first
	MMProj *File  // the projector llama-server loads with the model; nil if none
	Preset *File  // a preset repository's preset.ini; then it is the only file
}

// files is everything the plan fetches.
func (p Plan) files() []File {
	if p.Preset != nil {
		return []File{*p.Preset}
	}
	fs := p.Model
	if p.MMProj != nil {
		fs = append(fs[:len(fs):len(fs)], *p.MMProj)
	}
	return fs
}

// Resolve asks the hub which files "owner/repo[:TAG]" is: the commit of
// the main branch (else the first valid one), its file tree, then the
// GGUF for the tag, all parts of a split model and the projector.
func (c *Client) Resolve(ctx context.Context, name string) (Plan, error) {
	return c.ResolveFile(ctx, name, "")
}

// ResolveFile is Resolve with the model's file named (llama-server's
// -hff), which overrides the tag: the file at exactly that path, its
// split parts and projector; ErrNotFound if the commit has none. A preset
// repository is still its preset.ini. file "" is Resolve.
func (c *Client) ResolveFile(ctx context.Context, name, file string) (Plan, error) {
	ref, err := ParseRef(name)
	if err != nil {
		return Plan{}, err
	}
	branch, commit, err := c.commit(ctx, ref)
	if err != nil {
		return Plan{}, err
	}
	files, err := c.tree(ctx, ref, commit)
	if err != nil {
		return Plan{}, err
	}
	p, err := planFor(ref, files, file, c.noMMProj)
	p.Branch, p.Commit = branch, commit
	return p, err
}

// planFor chooses among a commit's files (llama.cpp's
// common_download_get_hf_plan): a preset.ini at the root alone, else the
// model file named (file, matched exactly) or the model for the tag, with
// its parts and projector.
func planFor(ref Ref, files []File, file string, noMMProj bool) (Plan, error) {
	p := Plan{Ref: ref}
	for _, f := range files {
		if f.Path == "preset.ini" {
			p.Preset = &f
			return p, nil
		}
	}
	primary, ok := chooseModel(files, ref.Tag)
	if file != "" {
		i := slices.IndexFunc(files, func(f File) bool { return f.Path == file })
		switch {
		case i < 0:
			return p, &Error{Ref: ref, Err: ErrNotFound, Msg: "no file " + file + " in the repository; " + ggufs(files)}
		case !strings.HasSuffix(file, ".gguf"):
			return p, &Error{Ref: ref, Err: ErrNoGGUF, Msg: file + " is not a GGUF file"}
		}
		primary, ok = files[i], true
	}
	if !ok {
		msg := "no model for the default tags (Q4_K_M, Q8_0)"
		if ref.Tag != "" {
			msg = "no model for tag " + ref.Tag
		}
		return p, &Error{Ref: ref, Err: ErrNoGGUF, Msg: msg + "; " + ggufs(files)}
	}
	parts, err := splitParts(files, primary)
	if err != nil {
		return p, &Error{Ref: ref, Err: ErrNoGGUF, Msg: err.Error()}
	}
	p.Model = parts
	if mm, ok := chooseMMProj(files, primary.Path); ok && !noMMProj {
		p.MMProj = &mm
	}
	return p, nil
}

// commit reads GET api/models/{repo}/refs.
func (c *Client) commit(ctx context.Context, ref Ref) (branch, commit string, err error) {
	var refs struct {
		Branches []struct {
			Name   string `json:"name"`
			Commit string `json:"targetCommit"`
		} `json:"branches"`
	}
	if _, err := c.getJSON(ctx, ref, c.endpoint+"api/models/"+ref.Repo+"/refs", &refs); err != nil {
		return "", "", err
	}
	for _, b := range refs.Branches {
		if !localPath(b.Name) || !validCommit(b.Commit) {
			continue // a name that would leave refs/, or not a commit
		}
		if b.Name == "main" {
			return b.Name, b.Commit, nil
		}
		if branch == "" {
			branch, commit = b.Name, b.Commit
		}
	}
	if branch == "" {
		return "", "", &Error{Ref: ref, Err: ErrNotFound, Msg: "the repository has no valid branch"}
	}
	return branch, commit, nil
}

// tree reads GET api/models/{repo}/tree/{commit}?recursive=true, every
// page. Entries that are not files, or whose path or oid is not valid,
// are skipped as llama.cpp skips them.
func (c *Client) tree(ctx context.Context, ref Ref, commit string) ([]File, error) {
	var files []File
	next := c.endpoint + "api/models/" + ref.Repo + "/tree/" + commit + "?recursive=true"
	for pages := 0; next != ""; pages++ {
		if pages == 1000 {
			return nil, &Error{Ref: ref, Err: ErrHub, Msg: "the file tree has over 1000 pages"}
		}
		var page []struct {
			Type string `json:"type"`
			Path string `json:"path"`
			OID  string `json:"oid"`
			Size int64  `json:"size"`
			LFS  *struct {
				OID string `json:"oid"`
			} `json:"lfs"`
		}
		var err error
		if next, err = c.getJSON(ctx, ref, next, &page); err != nil {
			return nil, err
		}
		for _, e := range page {
			f := File{Path: e.Path, OID: e.OID, Size: e.Size}
			if e.LFS != nil {
				f.OID, f.LFS = e.LFS.OID, true
			}
			if e.Type != "file" || !localPath(f.Path) || f.OID != "" && !validOID(f.OID) {
				continue
			}
			f.LFS = f.LFS && isHex(f.OID, 64)
			files = append(files, f)
		}
	}
	return files, nil
}

// maxJSON bounds an API answer.
const maxJSON = 64 << 20

// getJSON GETs an API URL into v and returns the next page's URL (from a
// Link header on the same host), "" if none.
func (c *Client) getJSON(ctx context.Context, ref Ref, u string, v any) (next string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", &Error{Ref: ref, Err: ErrHub, Msg: err.Error()}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.do(req)
	if err != nil {
		return "", &Error{Ref: ref, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", hubError(ref, resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSON)).Decode(v); err != nil {
		return "", &Error{Ref: ref, Err: ErrHub, Msg: fmt.Sprintf("GET %s: %v", req.URL.Path, err)}
	}
	return c.nextPage(req.URL, resp.Header.Get("Link")), nil
}

// do sends req with the client's User-Agent and token.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", "tandem-hfhub")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.http.Do(req)
}

// hubError reads the hub's {"error": "..."} answer.
func hubError(ref Ref, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return &Error{Ref: ref, Status: resp.StatusCode, Err: statusErr(resp.StatusCode), Msg: msg}
}

// nextPage reads `Link: <URL>; rel="next"`, resolved against base; a URL
// off the endpoint's host is ignored so a page cannot send the token
// elsewhere.
func (c *Client) nextPage(base *url.URL, link string) string {
	for _, l := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(l), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u, err := base.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
		if err != nil || u.Scheme != c.host.Scheme || u.Host != c.host.Host {
			return ""
		}
		return u.String()
	}
	return ""
}
