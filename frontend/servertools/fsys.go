package servertools

import (
	"context"
	"strings"
	"time"
)

// fsys is where a tool call's I/O happens: the host (host.go) or an
// isolate reached by commands (isolate.go). Paths given to it are
// resolved against its working directory first.
type fsys interface {
	// resolve makes p absolute against the working directory.
	resolve(p string) string
	isDir(ctx context.Context, p string) bool
	isFile(ctx context.Context, p string) bool
	size(ctx context.Context, p string) (int64, bool)
	readFile(ctx context.Context, p string) ([]byte, bool)
	// writeFile creates p's missing parent directories too.
	writeFile(ctx context.Context, p string, b []byte) bool
	// list walks base (resolved already); maxDepth 0 is unlimited, 1 the
	// direct children only.
	list(ctx context.Context, base string, maxDepth int, kind listKind) listing
	// run runs args in the working directory.
	run(ctx context.Context, args []string, maxOutput int, timeout time.Duration, onChunk func(string) bool) procResult
	// isolated reports whether this is an isolate rather than the host.
	isolated() bool
}

// listKind is which entries a listing returns.
type listKind int

const (
	listFiles listKind = iota // regular files only
	listDirs                  // directories only
	listAll                   // both
)

// entry is one listed path, '/'-separated and relative to the base.
type entry struct {
	Rel   string
	IsDir bool
}

// listing is a directory walk's result.
type listing struct {
	Entries   []entry
	Err       string // set when the base is not a directory
	Truncated bool   // the walk ran out of time or met an unreadable directory
}

// Listing limits, as llama-server's.
const (
	listTimeout   = 15 * time.Second // one listing, git or walker
	listMaxOutput = 8 << 20          // bytes of `git ls-files` (or `find`) output
)

// junkDirs are listed but never walked into: they can be enormous.
var junkDirs = map[string]bool{".git": true, ".svn": true, ".hg": true, "node_modules": true, "__pycache__": true,
	".venv": true, "venv": true, "dist": true, "build": true, "target": true, ".cache": true, ".idea": true, ".vscode": true}

// gitLsFiles is the command that lists a directory's files as git sees
// them: tracked and untracked, without the ignored ones.
var gitLsFiles = []string{"git", "ls-files", "--cached", "--others", "--exclude-standard"}

// depth is the number of components of a '/'-separated relative path.
func depth(rel string) int { return 1 + strings.Count(rel, "/") }

// lines splits text as std::getline does: on '\n', no empty last line
// after a final newline.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	ls := strings.Split(text, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// outputLines are a command's non-empty output lines, '\r' trimmed and
// separators made '/'.
func outputLines(text string) []string {
	var out []string
	for _, l := range lines(text) {
		l = strings.ReplaceAll(strings.TrimSuffix(l, "\r"), "\\", "/")
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
