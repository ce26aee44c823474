package servertools

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Result caps, as llama-server's.
const (
	fileSearchMaxResults = 100
	grepMaxResults       = 100
)

func fileGlobSearchTool() *Tool {
	return &Tool{Name: "file_glob_search", DisplayName: "File search", invoke: fileGlobSearch,
		Definition: function("file_glob_search", "Recursively search for files matching a glob pattern under a directory. "+
			"Automatically skips files ignored by .gitignore (when the directory is inside a git repo) "+
			"and common junk directories (.git, node_modules, build, dist, etc.) otherwise. "+
			"A pattern with no '/' (e.g. \"*.cpp\") matches the file's basename at any depth. "+
			"A pattern containing '/' matches the full relative path; unless already anchored with "+
			"\"**/\" or a leading '/', it is automatically prefixed with \"**/\". "+
			"Use type=\"dir\" or \"all\" to also list directories; directory entries are suffixed with '/' in the output. "+
			"Note: directory listings do not apply .gitignore filtering.",
			map[string][2]string{
				"path":      {"string", "Base directory to search in"},
				"include":   {"string", "Glob pattern for files to include (e.g. \"*.cpp\" or \"src/**/*.cpp\"). Default: **"},
				"exclude":   {"string", "Glob pattern for files to exclude"},
				"type":      {"string", "Entry type to return: \"file\" (default), \"dir\" or \"all\""},
				"max_depth": {"integer", "Maximum depth to descend into subdirectories (default: 0 = unlimited; 1 = direct children only)"},
				"limit":     {"integer", fmt.Sprintf("Maximum number of results to return, capped at %d (default %d)", fileSearchMaxResults, fileSearchMaxResults)},
			}, "path")}
}

func fileGlobSearch(ctx context.Context, c call) (any, error) {
	p := struct {
		Path     *string `json:"path"`
		Include  string  `json:"include"`
		Exclude  string  `json:"exclude"`
		Type     string  `json:"type"`
		MaxDepth int     `json:"max_depth"`
		Limit    *int    `json:"limit"`
	}{Include: "**", Type: "file"}
	if err := decode(c.params, &p); err != nil {
		return nil, err
	}
	if p.Path == nil {
		return nil, missing("path")
	}
	base, limit := c.fs.resolve(*p.Path), fileSearchMaxResults
	if p.Limit != nil {
		if *p.Limit < 1 {
			return failf("invalid limit: %d (expected 1 or more)", *p.Limit), nil
		}
		limit = min(*p.Limit, fileSearchMaxResults)
	}
	kind, ok := map[string]listKind{"file": listFiles, "dir": listDirs, "all": listAll}[p.Type]
	if !ok {
		return failf(`invalid type: %s (expected "file", "dir" or "all")`, p.Type), nil
	}
	l := c.fs.list(ctx, base, max(0, p.MaxDepth), kind)
	if l.Err != "" {
		return failf("%s: %s", l.Err, *p.Path), nil
	}
	var found []entry
	for _, e := range l.Entries {
		if pathMatch(p.Include, e.Rel) && (p.Exclude == "" || !pathMatch(p.Exclude, e.Rel)) {
			found = append(found, e)
		}
	}
	shown := min(len(found), limit)
	var out strings.Builder
	entries := []map[string]string{}
	for _, e := range found[:shown] {
		typ, suffix := "file", ""
		if e.IsDir {
			typ, suffix = "dir", "/"
		}
		out.WriteString(e.Rel + suffix + "\n")
		entries = append(entries, map[string]string{"path": e.Rel, "type": typ})
	}
	fmt.Fprintf(&out, "\n---\nTotal matches: %d\n", len(found))
	if len(found) > shown {
		fmt.Fprintf(&out, "[%d results limit reached (%d total matches). Refine the glob pattern to narrow the search.]\n", shown, len(found))
	}
	if l.Truncated {
		out.WriteString("[results truncated: time budget or unreadable directory]\n")
	}
	// base is absolute, so a client (a web UI's picker) can join entries
	// to it; the model reads plain_text_response.
	return map[string]any{"plain_text_response": out.String(), "entries": entries, "base": base}, nil
}

func grepSearchTool() *Tool {
	return &Tool{Name: "grep_search", DisplayName: "Grep search", invoke: grepSearch,
		Definition: function("grep_search", "Search for a pattern in files under a path. Returns matching lines with file paths "+
			"(and, unless searching a single file, paths relative to the given directory). "+
			"Automatically skips files ignored by .gitignore (when the directory is inside a git repo) "+
			"and common junk directories (.git, node_modules, build, dist, etc.) otherwise. "+
			"include/exclude: a pattern with no '/' matches the basename at any depth; a pattern "+
			"containing '/' matches the full relative path (auto-anchored with \"**/\" unless already anchored).",
			map[string][2]string{
				"path":                {"string", "File or directory to search in"},
				"pattern":             {"string", "Pattern to search for (regular expression unless literal is true)"},
				"include":             {"string", "Glob pattern to filter files (default: **)"},
				"exclude":             {"string", "Glob pattern to exclude files"},
				"return_line_numbers": {"boolean", "If true, include line numbers in results"},
				"literal":             {"boolean", "Treat pattern as a literal string instead of a regular expression (default: false)"},
				"ignore_case":         {"boolean", "Case-insensitive search (default: false)"},
				"context_lines":       {"integer", "Number of lines of context to show before and after each match (default: 0)"},
			}, "path", "pattern")}
}

func grepSearch(ctx context.Context, c call) (any, error) {
	p := struct {
		Path        *string `json:"path"`
		Pattern     *string `json:"pattern"`
		Include     string  `json:"include"`
		Exclude     string  `json:"exclude"`
		LineNumbers bool    `json:"return_line_numbers"`
		Literal     bool    `json:"literal"`
		IgnoreCase  bool    `json:"ignore_case"`
		Context     int     `json:"context_lines"`
	}{Include: "**"}
	if err := decode(c.params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Path == nil:
		return nil, missing("path")
	case p.Pattern == nil:
		return nil, missing("pattern")
	}
	src := *p.Pattern
	if p.Literal {
		src = regexp.QuoteMeta(src)
	}
	if p.IgnoreCase {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return failf("invalid regex: %v", err), nil
	}
	type file struct{ abs, shown string }
	var files []file
	abs := c.fs.resolve(*p.Path)
	switch {
	case c.fs.isFile(ctx, abs):
		files = append(files, file{abs, *p.Path})
	case c.fs.isDir(ctx, abs):
		l := c.fs.list(ctx, abs, 0, listFiles)
		if l.Err != "" {
			return failf("%s: %s", l.Err, *p.Path), nil
		}
		for _, e := range l.Entries {
			if pathMatch(p.Include, e.Rel) && (p.Exclude == "" || !pathMatch(p.Exclude, e.Rel)) {
				files = append(files, file{path.Join(abs, e.Rel), e.Rel})
			}
		}
	default:
		return failf("path does not exist: %s", *p.Path), nil
	}
	var out strings.Builder
	total, ctxLines, limited := 0, max(0, p.Context), false
	numbers := p.LineNumbers || ctxLines > 0
	for _, f := range files {
		if limited || ctx.Err() != nil {
			break
		}
		b, ok := c.fs.readFile(ctx, f.abs)
		if !ok {
			continue
		}
		ls := lines(string(b))
		for i, line := range ls {
			if total >= grepMaxResults {
				limited = true
				break
			}
			if !re.MatchString(line) {
				continue
			}
			for j := max(0, i-ctxLines); j <= min(len(ls)-1, i+ctxLines); j++ {
				sep := "-"
				if j == i {
					sep = ":"
				}
				out.WriteString(f.shown + sep)
				if numbers {
					fmt.Fprintf(&out, "%d%s", j+1, sep)
				}
				out.WriteString(ls[j] + "\n")
			}
			if ctxLines > 0 {
				out.WriteString("--\n")
			}
			total++
		}
	}
	fmt.Fprintf(&out, "\n---\nTotal matches: %d\n", total)
	if limited {
		fmt.Fprintf(&out, "[%d matches limit reached. Narrow the path/pattern/include to see more.]\n", grepMaxResults)
	}
	return text(out.String()), nil
}
