package servertools

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// isolate is a container or remote host: every operation is a POSIX
// command (sh, cat, wc, mkdir, dirname, find, timeout) run through wrap.
// Paths are POSIX whatever the server's OS.
type isolate struct {
	cwd string
	// wrap turns a command run in the isolate into the host command
	// that runs it; stdin says whether it reads its standard input.
	wrap func(inner []string, stdin bool) []string
}

// Isolate limits, as llama-server's: helper commands (stat, mkdir, ls)
// and the largest file read.
const (
	isolateTimeout     = 15 * time.Second
	isolateMaxReadSize = 64 << 20
)

// resolve joins a relative p to the working directory and drops "."
// and "..": isolate paths are POSIX whatever the server's OS.
func (s isolate) resolve(p string) string {
	if s.cwd != "" && !strings.HasPrefix(p, "/") {
		p = s.cwd + "/" + p
	}
	if p == "" {
		return p
	}
	return path.Clean(p)
}

// exec runs a helper command in the isolate.
func (s isolate) exec(ctx context.Context, inner []string, maxOutput int, splitStderr bool) procResult {
	return runProc(ctx, procSpec{Args: s.wrap(inner, false), MaxOutput: maxOutput, Timeout: isolateTimeout, SplitStderr: splitStderr})
}

func (s isolate) ok(ctx context.Context, inner ...string) bool {
	res := s.exec(ctx, inner, 4096, false)
	return res.ExitCode == 0 && !res.TimedOut
}

func (s isolate) isDir(ctx context.Context, p string) bool {
	return s.ok(ctx, "sh", "-c", `[ -d "$1" ]`, "_", s.resolve(p))
}

func (s isolate) isFile(ctx context.Context, p string) bool {
	return s.ok(ctx, "sh", "-c", `[ -f "$1" ]`, "_", s.resolve(p))
}

func (s isolate) size(ctx context.Context, p string) (int64, bool) {
	res := s.exec(ctx, []string{"sh", "-c", `wc -c < "$1"`, "_", s.resolve(p)}, 64, false)
	if res.ExitCode != 0 || res.TimedOut {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(res.Output), 10, 64)
	return n, err == nil
}

func (s isolate) readFile(ctx context.Context, p string) ([]byte, bool) {
	res := s.exec(ctx, []string{"cat", "--", s.resolve(p)}, isolateMaxReadSize, true)
	return []byte(res.Output), res.ExitCode == 0 && !res.TimedOut
}

// writeFile sends the content on stdin: nothing for the far side to
// parse again, no temporary file on the host.
func (s isolate) writeFile(ctx context.Context, p string, b []byte) bool {
	if b == nil {
		b = []byte{}
	}
	args := s.wrap([]string{"sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "_", s.resolve(p)}, true)
	res := runProc(ctx, procSpec{Args: args, Stdin: b, MaxOutput: 4096, Timeout: isolateTimeout})
	return res.ExitCode == 0 && !res.TimedOut
}

// run wraps args in the isolate's own `timeout` (killing the host-side
// client does not kill what runs in the isolate) and in a cd to the
// working directory; the host-side limit is a little longer.
func (s isolate) run(ctx context.Context, args []string, maxOutput int, timeout time.Duration, onChunk func(string) bool) procResult {
	inner := append([]string{"timeout", fmt.Sprintf("%ds", int(timeout.Seconds()))}, args...)
	if s.cwd != "" { // 127: what a shell reports for a command it could not run
		inner = append([]string{"sh", "-c", `cd "$1" || exit 127; shift; exec "$@"`, "_", s.cwd}, inner...)
	}
	return runProc(ctx, procSpec{Args: s.wrap(inner, true), Stdin: []byte{}, MaxOutput: maxOutput, Timeout: timeout + 5*time.Second, OnChunk: onChunk})
}

func (isolate) isolated() bool { return true }

// list lists files with git where it can, else with find (junk
// directories listed, not walked into).
func (s isolate) list(ctx context.Context, base string, maxDepth int, kind listKind) listing {
	abs := s.resolve(base)
	if !s.isDir(ctx, abs) {
		return listing{Err: "path does not exist or is not a directory"}
	}
	var out listing
	if kind == listFiles {
		res := s.exec(ctx, []string{"sh", "-c", `cd "$1" && ` + strings.Join(gitLsFiles, " "), "_", abs}, listMaxOutput, true)
		if res.ExitCode == 0 && !res.TimedOut && res.Output != "" {
			for _, rel := range outputLines(res.Output) {
				if maxDepth == 0 || depth(rel) <= maxDepth {
					out.Entries = append(out.Entries, entry{Rel: rel})
				}
			}
			return out
		}
	}
	if kind != listFiles {
		for _, rel := range s.find(ctx, abs, maxDepth, true, &out.Truncated) {
			out.Entries = append(out.Entries, entry{Rel: rel, IsDir: true})
		}
	}
	if kind != listDirs {
		for _, rel := range s.find(ctx, abs, maxDepth, false, &out.Truncated) {
			out.Entries = append(out.Entries, entry{Rel: rel})
		}
	}
	slices.SortFunc(out.Entries, func(a, b entry) int { return strings.Compare(a.Rel, b.Rel) })
	return out
}

// find is one `find` pass over abs for directories or files.
// -mindepth/-maxdepth keep a busybox image working as well as GNU's.
func (s isolate) find(ctx context.Context, abs string, maxDepth int, dirs bool, truncated *bool) []string {
	var prune []string
	for name := range junkDirs {
		prune = append(prune, "-name "+name)
	}
	cmd := `cd "$1" && find . -mindepth 1`
	if maxDepth > 0 {
		cmd += " -maxdepth " + strconv.Itoa(maxDepth)
	}
	cmd += ` \( ` + strings.Join(prune, " -o ") + ` \) -prune`
	if dirs {
		cmd += " -print -o -type d -print"
	} else {
		cmd += " -o -type f -print"
	}
	res := s.exec(ctx, []string{"sh", "-c", cmd, "_", abs}, listMaxOutput, true)
	*truncated = *truncated || res.TimedOut
	out := outputLines(res.Output)
	for i, l := range out {
		out[i] = strings.TrimPrefix(l, "./")
	}
	return out
}
