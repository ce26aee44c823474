package hfhub

import (
	"path/filepath"
	"strings"
)

// Ref names a model of the hub: a repository and an optional quantization
// tag, written "owner/repo[:TAG]" as llama-server's -hf and POST /models
// take it.
type Ref struct {
	Repo string // "owner/repo"
	Tag  string // "Q4_K_M"; "" picks llama.cpp's default (Q4_K_M, Q8_0, the first GGUF)
}

func (r Ref) String() string {
	if r.Tag == "" {
		return r.Repo
	}
	return r.Repo + ":" + r.Tag
}

// ParseRef reads "owner/repo[:TAG]". The repository follows the hub's
// (and llama.cpp's) rule: letters, digits and _, with / . - only between
// them, exactly one /, at most 256 bytes. A tag is letters, digits and
// _ . - (unsloth's "UD-Q4_K_XL"); it is matched literally, never as a
// pattern.
func ParseRef(s string) (Ref, error) {
	repo, tag, hasTag := strings.Cut(s, ":")
	if !validRepo(repo) || hasTag && !validTag(tag) {
		return Ref{}, &Error{Ref: Ref{Repo: s}, Err: ErrInvalidName, Msg: "want owner/repo[:TAG]"}
	}
	return Ref{Repo: repo, Tag: tag}, nil
}

func alnum(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// validRepo: [A-Za-z0-9_] always; / . - only between two of those; one /.
func validRepo(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	slashes, special := 0, true // special: the last byte was / . - (or none yet)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case alnum(c) || c == '_':
			special = false
		case c == '/' || c == '.' || c == '-':
			if special {
				return false
			}
			if c == '/' {
				slashes++
			}
			special = true
		default:
			return false
		}
	}
	return !special && slashes == 1
}

func validTag(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validCommit: a git commit id, 40 hex digits.
func validCommit(s string) bool { return isHex(s, 40) }

// validOID: a git blob id (sha1) or an LFS one (sha256).
func validOID(s string) bool { return isHex(s, 40) || isHex(s, 64) }

// localPath reports whether the hub's '/'-separated path p stays inside
// the directory it is joined to: relative, no "..", no empty name. Branch
// names and file paths of the hub pass through it before they touch the
// disk.
func localPath(p string) bool {
	return p != "" && !strings.ContainsRune(p, '\\') && !strings.ContainsRune(p, 0) && filepath.IsLocal(filepath.FromSlash(p))
}

// repoFolder is the cache's folder of a repository: models--OWNER--REPO.
func repoFolder(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}
