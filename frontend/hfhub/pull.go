package hfhub

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
)

// Model is a model in the cache, ready for --model (and --mmproj).
type Model struct {
	Name   string   // "owner/repo:TAG" with the file's own tag, as the cache scanner lists it ("owner/repo" if the name has none)
	Ref    Ref      // as asked
	Commit string   // the snapshot
	Path   string   // the model's file (a split model's first part), in snapshots/COMMIT/
	Files  []string // every file of the model, first part first
	MMProj string   // the projector fetched with it; "" if none
	Preset string   // a preset repository's preset.ini; then there are no model files
}

// model is where plan's files are in the cache.
func (c *Client) model(p Plan) Model {
	m := Model{Ref: p.Ref, Name: p.Ref.Repo, Commit: p.Commit}
	if p.Preset != nil {
		m.Preset = c.snapPath(p.Ref.Repo, p.Commit, p.Preset.Path)
		return m
	}
	for _, f := range p.Model {
		m.Files = append(m.Files, c.snapPath(p.Ref.Repo, p.Commit, f.Path))
	}
	if len(m.Files) > 0 {
		m.Path = m.Files[0]
		if s, _ := splitOf(p.Model[0].Path); s.tag != "" {
			m.Name += ":" + s.tag
		}
	}
	if p.MMProj != nil {
		m.MMProj = c.snapPath(p.Ref.Repo, p.Commit, p.MMProj.Path)
	}
	return m
}

// Progress is a report on one file of a download. Reports come at most
// every MiB or 200 ms per file, and once more when the file is done; the
// callback is never called concurrently.
type Progress struct {
	File   string // the file's path in the repository
	URL    string // where it is fetched from (before redirects)
	Bytes  int64  // on disk so far; a resumed download starts above 0
	Total  int64  // the file's size; 0 if unknown
	Done   bool   // the file's last report; Err says how it ended
	Cached bool   // it was in the cache already: nothing was fetched
	Err    error
}

// Pull makes "owner/repo[:TAG]" available in the cache and says where it
// is: Resolve, then Download. If the hub cannot be asked (or refuses), a
// copy already in the cache is used, as llama.cpp falls back to it.
// progress may be nil. Cancelling ctx stops the downloads and keeps their
// partial files, which the next Pull resumes.
func (c *Client) Pull(ctx context.Context, name string, progress func(Progress)) (Model, error) {
	return c.PullFile(ctx, name, "", progress)
}

// PullFile is Pull with the model's file named, as ResolveFile takes it.
func (c *Client) PullFile(ctx context.Context, name, file string, progress func(Progress)) (Model, error) {
	plan, err := c.ResolveFile(ctx, name, file)
	if err != nil {
		if errors.Is(err, ErrInvalidName) || ctx.Err() != nil {
			return Model{}, err
		}
		if m, lerr := c.LocalFile(name, file); lerr == nil {
			return m, nil
		}
		return Model{}, err
	}
	return c.Download(ctx, plan, progress)
}

// Download fetches the files of plan that the cache lacks, Options.Parallel
// at a time, records the branch's commit in refs/ and returns where the
// model is. The first failure cancels the other files.
func (c *Client) Download(ctx context.Context, plan Plan, progress func(Progress)) (Model, error) {
	ref := plan.Ref
	if !validRepo(ref.Repo) || !validCommit(plan.Commit) || plan.Branch != "" && !localPath(plan.Branch) {
		return Model{}, &Error{Ref: ref, Err: ErrInvalidName, Msg: "a plan needs a valid repository, commit and branch"}
	}
	files := plan.files()
	for _, f := range files {
		if !localPath(f.Path) || f.OID != "" && !validOID(f.OID) {
			return Model{}, &Error{Ref: ref, Err: ErrInvalidName, Msg: "invalid file " + f.Path}
		}
	}
	if plan.Branch != "" {
		if err := c.writeRef(ref.Repo, plan.Branch, plan.Commit); err != nil {
			return Model{}, &Error{Ref: ref, Err: err}
		}
	}
	var mu sync.Mutex // serializes progress
	report := func(p Progress) {
		if progress != nil {
			mu.Lock()
			defer mu.Unlock()
			progress(p)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, c.parallel)
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = context.Cause(ctx)
				return
			}
			defer func() { <-sem }()
			if errs[i] = c.fetch(ctx, plan, f, report); errs[i] != nil {
				cancel(errs[i])
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		if e := (*Error)(nil); !errors.As(err, &e) {
			err = &Error{Ref: ref, Err: err}
		}
		return Model{}, err
	}
	return c.model(plan), nil
}

// fileURL is {endpoint}{repo}/resolve/{commit}/{path}, the path escaped.
func (c *Client) fileURL(repo, commit, p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return c.endpoint + repo + "/resolve/" + commit + "/" + strings.Join(parts, "/")
}

// keyLocks are mutexes by name (a blob's path) that a waiter can give up
// on when its ctx ends.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when its holder unlocks
}

func (k *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		k.mu.Lock()
		ch, busy := k.held[key]
		if !busy {
			if k.held == nil {
				k.held = map[string]chan struct{}{}
			}
			ch = make(chan struct{})
			k.held[key] = ch
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(ch)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
