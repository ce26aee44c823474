package servertools

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
)

// read_file's limits, as llama-server's: the text answer, and a file
// read whole for x-resp-type: base64.
const (
	readFileMaxSize       = 16 << 10
	readFileMaxSizeBase64 = 32 << 20
)

func readFileTool() *Tool {
	return &Tool{Name: "read_file", DisplayName: "Read file", invoke: readFile,
		Definition: function("read_file", "Read the contents of a file. Optionally specify a 1-based line range. "+
			"If append_loc is true, each line is prefixed with its line number (e.g. \"1\u2192...\").",
			map[string][2]string{
				"path":       {"string", "Path to the file"},
				"start_line": {"integer", "First line to read, 1-based (default: 1)"},
				"end_line":   {"integer", "Last line to read, 1-based inclusive (default: end of file)"},
				"append_loc": {"boolean", "Prefix each line with its line number"},
			}, "path")}
}

func readFile(ctx context.Context, c call) (any, error) {
	p := struct {
		Path      *string `json:"path"`
		StartLine *int    `json:"start_line"`
		EndLine   *int    `json:"end_line"`
		AppendLoc bool    `json:"append_loc"`
	}{}
	if err := decode(c.params, &p); err != nil {
		return nil, err
	}
	if p.Path == nil {
		return nil, missing("path")
	}
	path, start, end := *p.Path, 1, -1 // end -1: to the end
	if p.StartLine != nil {
		start = *p.StartLine
	}
	if p.EndLine != nil {
		end = *p.EndLine
	}
	size, ok := c.fs.size(ctx, path)
	if !ok {
		return failf("cannot stat file: %s", path), nil
	}
	if c.env.Base64 {
		if size > readFileMaxSizeBase64 {
			return failf("file too large (%d bytes, max %d)", size, readFileMaxSizeBase64), nil
		}
		b, ok := c.fs.readFile(ctx, path)
		if !ok {
			return failf("failed to open file: %s", path), nil
		}
		return map[string]any{"base64": base64.StdEncoding.EncodeToString(b), "size_bytes": len(b)}, nil
	}
	if size > readFileMaxSize && end == -1 {
		return failf("file too large (%d bytes, max %d). Use start_line/end_line to read a portion.", size, readFileMaxSize), nil
	}
	b, ok := c.fs.readFile(ctx, path)
	if !ok {
		return failf("failed to open file: %s", path), nil
	}
	var out strings.Builder
	for i, line := range lines(string(b)) {
		n := i + 1
		if n < start {
			continue
		}
		if end != -1 && n > end {
			break
		}
		if p.AppendLoc {
			line = strconv.Itoa(n) + "\u2192" + line
		}
		if out.Len()+len(line)+1 > readFileMaxSize {
			out.WriteString("[output truncated]")
			break
		}
		out.WriteString(line + "\n")
	}
	return text(out.String()), nil
}

func writeFileTool() *Tool {
	return &Tool{Name: "write_file", DisplayName: "Write file", Write: true, invoke: writeFile,
		Definition: function("write_file", "Write content to a file, creating it (including parent directories) if it does not exist. "+
			"May use with edit_file for more complex edits.",
			map[string][2]string{
				"path":    {"string", "Path of the file to write"},
				"content": {"string", "Content to write"},
			}, "path", "content")}
}

func writeFile(ctx context.Context, c call) (any, error) {
	p := struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}{}
	if err := decode(c.params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Path == nil:
		return nil, missing("path")
	case p.Content == nil:
		return nil, missing("content")
	}
	if !c.fs.writeFile(ctx, *p.Path, []byte(*p.Content)) {
		return failf("failed to write file: %s", *p.Path), nil
	}
	return map[string]any{"result": "file written successfully", "path": *p.Path, "bytes": len(*p.Content)}, nil
}
