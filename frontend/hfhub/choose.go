package hfhub

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// File is one file of a repository at a commit, as the hub's tree lists it.
type File struct {
	Path string // in the repository, '/'-separated
	OID  string // the blob's id: the LFS sha256, else git's sha1; "" if unknown
	Size int64  // bytes; 0 if unknown
	LFS  bool   // OID is the sha256 of the content, checked after download
}

// split is what a GGUF's name says: "dir/name-Q4_K_M-00001-of-00003.gguf"
// is prefix "dir/name-Q4_K_M", tag "Q4_K_M", part 1 of 3.
type split struct {
	prefix, tag  string
	index, count int
}

var (
	splitName = regexp.MustCompile(`(?i)^(.+)-([0-9]{5})-of-([0-9]{5})$`)
	tagName   = regexp.MustCompile(`(?i)[-.]([A-Z0-9_]+)$`)
)

// splitOf reads a GGUF's name; ok is false for other files.
func splitOf(p string) (s split, ok bool) {
	prefix, ok := strings.CutSuffix(p, ".gguf")
	if !ok {
		return split{}, false
	}
	s = split{prefix: prefix, index: 1, count: 1}
	if m := splitName.FindStringSubmatch(prefix); m != nil {
		s.prefix = m[1]
		s.index, _ = strconv.Atoi(m[2])
		s.count, _ = strconv.Atoi(m[3])
	}
	if m := tagName.FindStringSubmatch(s.prefix); m != nil {
		s.tag = strings.ToUpper(m[1])
	}
	return s, true
}

// first reports a GGUF that is a whole model or a split model's first part.
func (s split) first() bool { return s.count <= 1 || s.index == 1 }

// quantBits is the number a tag starts its digits with: Q4_K_M 4, F16 16,
// IQ2_XXS 2; 0 if it has none.
func quantBits(tag string) int {
	i := strings.IndexAny(tag, "0123456789")
	if i < 0 {
		return 0
	}
	j := i
	for j < len(tag) && j-i < 9 && tag[j] >= '0' && tag[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(tag[i:j])
	return n
}

// isModel: a GGUF that is a model, not one of llama.cpp's companions
// (projectors, importance matrices, speculative-decoding heads).
func isModel(p string) bool {
	if !strings.HasSuffix(p, ".gguf") {
		return false
	}
	base := path.Base(p)
	for _, k := range []string{"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"} {
		if strings.Contains(base, k) {
			return false
		}
	}
	return true
}

// defaultTags are tried, in order, when a name has no tag.
var defaultTags = []string{"Q4_K_M", "Q8_0"}

// chooseModel picks the model file for tag as llama.cpp does: the first
// model GGUF (a split model's first part) whose path holds the tag,
// case-insensitively, followed by '.' or '-'. Without a tag it tries
// Q4_K_M, then Q8_0, then takes the first model GGUF. ok is false when
// nothing fits.
func chooseModel(files []File, tag string) (File, bool) {
	tags := defaultTags
	if tag != "" {
		tags = []string{tag}
	}
	for _, t := range tags {
		t = strings.ToLower(t)
		for _, f := range files {
			p := strings.ToLower(f.Path)
			if s, _ := splitOf(f.Path); isModel(f.Path) && s.first() &&
				(strings.Contains(p, t+".") || strings.Contains(p, t+"-")) {
				return f, true
			}
		}
	}
	if tag == "" {
		for _, f := range files {
			if s, _ := splitOf(f.Path); isModel(f.Path) && s.first() {
				return f, true
			}
		}
	}
	return File{}, false
}

// splitParts lists every part of the model whose first file is primary,
// in order; an error if the repository lacks one.
func splitParts(files []File, primary File) ([]File, error) {
	s, _ := splitOf(primary.Path)
	if s.count <= 1 {
		return []File{primary}, nil
	}
	parts := make([]File, s.count)
	for _, f := range files {
		if fs, ok := splitOf(f.Path); ok && fs.count == s.count && fs.prefix == s.prefix && fs.index >= 1 && fs.index <= s.count {
			parts[fs.index-1] = f
		}
	}
	for i, f := range parts {
		if f.Path == "" {
			return nil, fmt.Errorf("%s: part %d of %d is missing", primary.Path, i+1, s.count)
		}
	}
	return parts, nil
}

// chooseMMProj picks the projector llama-server loads with model, as
// llama.cpp does: among the GGUFs named "mmproj" in model's directory or
// one above it, the deepest, then the one whose quantization bits are
// closest to the model's (an F16 model takes an F16 projector, a Q4 model
// a Q8 one over F16). ok is false when there is none.
func chooseMMProj(files []File, model string) (File, bool) {
	ms, _ := splitOf(model)
	bits := quantBits(ms.tag)
	modelDir := strings.Split(model, "/")
	modelDir = modelDir[:len(modelDir)-1]
	var best File
	bestDepth, bestDiff, found := 0, 0, false
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".gguf") || !strings.Contains(f.Path, "mmproj") {
			continue
		}
		dir := strings.Split(f.Path, "/")
		dir = dir[:len(dir)-1]
		if len(dir) > len(modelDir) || !slices.Equal(dir, modelDir[:len(dir)]) {
			continue
		}
		s, _ := splitOf(f.Path)
		diff := quantBits(s.tag) - bits
		if diff < 0 {
			diff = -diff
		}
		if !found || len(dir) > bestDepth || len(dir) == bestDepth && diff < bestDiff {
			best, bestDepth, bestDiff, found = f, len(dir), diff, true
		}
	}
	return best, found
}

// ggufs lists the GGUF paths of files, for "no GGUF for the tag" messages.
func ggufs(files []File) string {
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".gguf") {
			names = append(names, f.Path)
		}
	}
	if len(names) == 0 {
		return "the repository has no GGUF files"
	}
	if len(names) > 20 {
		names = append(names[:20], fmt.Sprintf("… %d more", len(names)-20))
	}
	return "available: " + strings.Join(names, ", ")
}
