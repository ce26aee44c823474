package servertools

import (
	"path"
	"strings"
)

// globMatch matches s against pattern as llama.cpp's glob_match does: *
// is any run of characters but '/', ** any run at all, ? one character
// but '/', [...] a class ([!...] negated, a-z ranges); anything else
// matches itself. Unlike llama.cpp's, "**/" also matches no directory at
// all, as shells' globstar does: "**/src/*.c" matches "src/a.c".
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch {
	case strings.HasPrefix(pattern, "**/") && globMatch(pattern[3:], s):
		return true
	case strings.HasPrefix(pattern, "**"):
		rest := pattern[2:]
		for i := 0; i <= len(s); i++ {
			if globMatch(rest, s[i:]) {
				return true
			}
		}
		return false
	case pattern[0] == '*':
		rest := pattern[1:]
		for i := 0; i <= len(s); i++ {
			if globMatch(rest, s[i:]) {
				return true
			}
			if i < len(s) && s[i] == '/' {
				return false
			}
		}
		return false
	case pattern[0] == '?':
		return s != "" && s[0] != '/' && globMatch(pattern[1:], s[1:])
	case pattern[0] == '[':
		end := classEnd(pattern)
		if end < 0 { // no closing ']': a literal '['
			return s != "" && s[0] == '[' && globMatch(pattern[1:], s[1:])
		}
		return s != "" && classMatch(s[0], pattern[1:end]) && globMatch(pattern[end+1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
}

// classEnd is the index of the ']' that closes the class opening
// pattern (a ']' or '-' first in it is literal), or -1.
func classEnd(pattern string) int {
	i := 1
	if i < len(pattern) && (pattern[i] == ']' || pattern[i] == '-') {
		i++
	}
	for ; i < len(pattern); i++ {
		if pattern[i] == ']' {
			return i
		}
	}
	return -1
}

// classMatch reports whether c is in the class body (between '[' and ']').
func classMatch(c byte, class string) bool {
	negated := strings.HasPrefix(class, "!")
	if negated {
		class = class[1:]
	}
	if class != "" && (class[0] == ']' || class[0] == '-') {
		if class[0] == c {
			return !negated
		}
		class = class[1:]
	}
	matched := false
	for i := 0; i < len(class); {
		if i+2 < len(class) && class[i+1] == '-' {
			if class[i] <= c && c <= class[i+2] {
				matched = true
				break
			}
			i += 3
			continue
		}
		if class[i] == c {
			matched = true
			break
		}
		i++
	}
	return matched != negated
}

// pathMatch matches a '/'-separated relative path as the tools' include
// and exclude do: a pattern without '/' matches the base name at any
// depth; one with '/' the whole path, anchored with "**/" unless it
// starts with "**" or '/'.
func pathMatch(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		return globMatch(pattern, path.Base(rel))
	}
	if pattern == "**" || strings.HasPrefix(pattern, "**/") || strings.HasPrefix(pattern, "/") {
		return globMatch(pattern, rel)
	}
	return globMatch("**/"+pattern, rel)
}
