package hfhub

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The cache is huggingface_hub's layout, which llama.cpp and Tandem's
// --models-cache read:
//
//	models--OWNER--REPO/
//	  blobs/OID                     the content, named by its LFS sha256 (or git sha1)
//	  blobs/OID.incomplete          a download in progress, resumed from its size
//	  refs/main                     the commit the branch was at (no newline)
//	  snapshots/COMMIT/PATH         a relative symlink to ../../blobs/OID

func (c *Client) repoDir(repo string) string { return filepath.Join(c.dir, repoFolder(repo)) }

func (c *Client) blobPath(repo, oid string) string {
	return filepath.Join(c.repoDir(repo), "blobs", oid)
}

func (c *Client) snapPath(repo, commit, p string) string {
	return filepath.Join(c.repoDir(repo), "snapshots", commit, filepath.FromSlash(p))
}

// partial is where a download to path is written until it is complete.
func partial(path string) string { return path + ".incomplete" }

// link points snap at blob with a relative symlink, replacing a stale one.
func link(blob, snap string) error {
	if err := os.MkdirAll(filepath.Dir(snap), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(snap), blob)
	if err != nil {
		return err
	}
	if err := os.Remove(snap); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Symlink(rel, snap)
}

// writeRef records the commit of a branch in refs/BRANCH, atomically.
func (c *Client) writeRef(repo, branch, commit string) error {
	p := filepath.Join(c.repoDir(repo), "refs", filepath.FromSlash(branch))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".ref-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(commit)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// cachedCommit is the commit refs/ records for repo (CachedCommit).
func (c *Client) cachedCommit(repo string) string { return CachedCommit(c.repoDir(repo)) }

// CachedCommit is the commit a cached repository's refs/ records, as
// llama.cpp's get_cached_ref reads it: main's, else the first valid one;
// "" if none. repoDir is the repository's models--OWNER--REPO folder.
func CachedCommit(repoDir string) string {
	ents, _ := os.ReadDir(filepath.Join(repoDir, "refs"))
	fallback := ""
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoDir, "refs", e.Name()))
		commit, _, _ := strings.Cut(string(b), "\n")
		if err != nil || !validCommit(commit) {
			continue
		}
		if e.Name() == "main" {
			return commit
		}
		if fallback == "" {
			fallback = commit
		}
	}
	return fallback
}

// cachedFiles lists the files of the cached commit of repo whose content
// is there (a link to a missing blob is not).
func (c *Client) cachedFiles(repo string) (commit string, files []File) {
	commit = c.cachedCommit(repo)
	if commit == "" {
		return "", nil
	}
	root := filepath.Join(c.repoDir(repo), "snapshots", commit)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".incomplete") {
			return nil
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err == nil {
			files = append(files, File{Path: filepath.ToSlash(rel)})
		}
		return nil
	})
	return commit, files
}

// Local resolves "owner/repo[:TAG]" from the cache alone, as llama.cpp
// does offline: the commit refs/ records, the tag's model among its
// snapshot's files. ErrNotFound if the repository is not cached, ErrNoGGUF
// if the tag is not.
func (c *Client) Local(name string) (Model, error) { return c.LocalFile(name, "") }

// LocalFile is Local with the model's file named, as ResolveFile takes
// it; ErrNotFound if the cached snapshot lacks it.
func (c *Client) LocalFile(name, file string) (Model, error) {
	ref, err := ParseRef(name)
	if err != nil {
		return Model{}, err
	}
	commit, files := c.cachedFiles(ref.Repo)
	if len(files) == 0 {
		return Model{}, &Error{Ref: ref, Err: ErrNotFound, Msg: "not in the cache " + c.dir}
	}
	p, err := planFor(ref, files, file, c.noMMProj)
	if err != nil {
		return Model{}, err
	}
	p.Commit = commit
	return c.model(p), nil
}

// Remove deletes a cached model as llama.cpp's common_download_remove
// does. Without a tag: the whole models--OWNER--REPO folder. With one:
// the snapshot entries (of every commit) whose GGUF name carries the tag,
// projectors included, then the blobs no remaining entry links to.
// ErrNotFound if nothing matched.
func (c *Client) Remove(name string) error {
	ref, err := ParseRef(name)
	if err != nil {
		return err
	}
	dir := c.repoDir(ref.Repo)
	if _, err := os.Lstat(dir); err != nil {
		return &Error{Ref: ref, Err: ErrNotFound, Msg: "not in the cache " + c.dir}
	}
	if ref.Tag == "" {
		if err := os.RemoveAll(dir); err != nil {
			return &Error{Ref: ref, Err: err}
		}
		return nil
	}
	tag := strings.ToUpper(ref.Tag)
	var gone []string
	blobs := map[string]bool{}
	c.walkSnapshots(ref.Repo, func(p, rel, target string) {
		if s, ok := splitOf(rel); ok && s.tag == tag {
			gone = append(gone, p)
			if target != "" {
				blobs[target] = true
			}
		}
	})
	if len(gone) == 0 {
		return &Error{Ref: ref, Err: ErrNotFound, Msg: "no cached file has the tag"}
	}
	var errs []error
	for _, p := range gone {
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	c.walkSnapshots(ref.Repo, func(_, _, target string) { delete(blobs, target) })
	for b := range blobs {
		// only blobs of this repository: a link elsewhere loses its link, not its target
		if filepath.Dir(b) == filepath.Join(dir, "blobs") {
			if err := os.Remove(b); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &Error{Ref: ref, Err: err}
	}
	return nil
}

// walkSnapshots calls fn with each file or link under snapshots/ (of
// every commit): its path, its path in the repository and, for a link,
// the cleaned path it points to.
func (c *Client) walkSnapshots(repo string, fn func(p, rel, target string)) {
	snaps := filepath.Join(c.repoDir(repo), "snapshots")
	commits, _ := os.ReadDir(snaps)
	for _, cm := range commits {
		root := filepath.Join(snaps, cm.Name())
		if !cm.IsDir() {
			continue
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return nil
			}
			target := ""
			if d.Type()&fs.ModeSymlink != 0 {
				if t, err := os.Readlink(p); err == nil {
					if !filepath.IsAbs(t) {
						t = filepath.Join(filepath.Dir(p), t)
					}
					target = filepath.Clean(t)
				}
			}
			fn(p, filepath.ToSlash(rel), target)
			return nil
		})
	}
}
