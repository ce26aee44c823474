package servertools

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// host is the server's own machine: files are read and written
// directly, commands run as the server's child processes.
type host struct {
	cwd string // "" = the server's working directory
}

// resolve expands a leading ~ to $HOME, joins a relative p to the
// working directory and drops "." and ".." (lexically, as llama-server).
func (h host) resolve(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home := os.Getenv("HOME"); home != "" {
			p = home + p[1:]
		}
	}
	if !filepath.IsAbs(p) {
		base := h.cwd
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return p
			}
			base = wd
		}
		p = filepath.Join(base, p)
	}
	return filepath.ToSlash(filepath.Clean(p))
}

func (h host) isDir(_ context.Context, p string) bool {
	fi, err := os.Stat(h.resolve(p))
	return err == nil && fi.IsDir()
}

func (h host) isFile(_ context.Context, p string) bool {
	fi, err := os.Stat(h.resolve(p))
	return err == nil && fi.Mode().IsRegular()
}

func (h host) size(_ context.Context, p string) (int64, bool) {
	fi, err := os.Stat(h.resolve(p))
	if err != nil || fi.IsDir() {
		return 0, false
	}
	return fi.Size(), true
}

func (h host) readFile(_ context.Context, p string) ([]byte, bool) {
	b, err := os.ReadFile(h.resolve(p))
	return b, err == nil
}

func (h host) writeFile(_ context.Context, p string, b []byte) bool {
	full := h.resolve(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return false
	}
	return os.WriteFile(full, b, 0o644) == nil
}

func (h host) run(ctx context.Context, args []string, maxOutput int, timeout time.Duration, onChunk func(string) bool) procResult {
	return runProc(ctx, procSpec{Args: args, Dir: h.cwd, MaxOutput: maxOutput, Timeout: timeout, OnChunk: onChunk})
}

func (host) isolated() bool { return false }

// list lists files as git sees them where base is in a work tree (and
// not ignored as a whole: then git lists nothing), else walks it.
func (h host) list(ctx context.Context, base string, maxDepth int, kind listKind) listing {
	if !h.isDir(ctx, base) {
		return listing{Err: "path does not exist or is not a directory"}
	}
	deadline := time.Now().Add(listTimeout)
	if kind == listFiles {
		args := append([]string{"git", "-C", base}, gitLsFiles[1:]...)
		res := runProc(ctx, procSpec{Args: args, MaxOutput: listMaxOutput, Timeout: listTimeout, SplitStderr: true})
		if res.ExitCode == 0 && !res.TimedOut && res.Output != "" {
			var out listing
			for _, rel := range outputLines(res.Output) {
				if (maxDepth == 0 || depth(rel) <= maxDepth) && h.isFile(ctx, path.Join(base, rel)) {
					out.Entries = append(out.Entries, entry{Rel: rel})
				}
			}
			return out
		}
	}
	return walk(ctx, base, maxDepth, kind, deadline)
}

// walk lists base's tree without following links, and without walking
// into junk directories (which are listed), until the deadline.
func walk(ctx context.Context, base string, maxDepth int, kind listKind, deadline time.Time) listing {
	var out listing
	type dir struct {
		rel   string
		depth int
	}
	stack := []dir{{}}
	for len(stack) > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			out.Truncated = true
			break
		}
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		des, err := os.ReadDir(filepath.Join(base, filepath.FromSlash(d.rel)))
		if err != nil && !errors.Is(err, fs.ErrPermission) {
			out.Truncated = true
		}
		for _, de := range des {
			rel := path.Join(d.rel, de.Name())
			isDir, isFile, link := de.IsDir(), de.Type().IsRegular(), de.Type()&fs.ModeSymlink != 0
			if link { // listed as what it points to, never walked
				fi, err := os.Stat(filepath.Join(base, filepath.FromSlash(rel)))
				if err != nil {
					continue
				}
				isDir, isFile = fi.IsDir(), fi.Mode().IsRegular()
			}
			switch {
			case isDir:
				if kind != listFiles {
					out.Entries = append(out.Entries, entry{Rel: rel, IsDir: true})
				}
				if !link && !junkDirs[de.Name()] && (maxDepth == 0 || d.depth+1 < maxDepth) {
					stack = append(stack, dir{rel, d.depth + 1})
				}
			case isFile && kind != listDirs:
				out.Entries = append(out.Entries, entry{Rel: rel})
			}
		}
	}
	slices.SortFunc(out.Entries, func(a, b entry) int { return strings.Compare(a.Rel, b.Rel) })
	return out
}
