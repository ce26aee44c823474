package session

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// HeaderName is the HTTP header that carries a session id (vLLM's
// SESSION_ID_HEADER). Lookup is case-insensitive.
const HeaderName = "X-Session-ID"

// MaxLen is the longest accepted session id, in bytes.
const MaxLen = 256

// xargsKey is the vllm_xargs key read as the compatibility fallback.
const xargsKey = "session_id"

// ErrInvalid is wrapped by every validation error of Resolve and Validate.
var ErrInvalid = errors.New("session: invalid session_id")

// Source says where a resolved session id came from.
type Source int

// The sources, in precedence order after SourceNone.
const (
	SourceNone Source = iota
	SourceBody
	SourceHeader
	SourceXArgs
)

// String returns a short name for logs and metric labels.
func (s Source) String() string {
	switch s {
	case SourceNone:
		return "none"
	case SourceBody:
		return "body"
	case SourceHeader:
		return "header"
	case SourceXArgs:
		return "vllm_xargs"
	default:
		return fmt.Sprintf("Source(%d)", int(s))
	}
}

// describe names the source in error messages.
func (s Source) describe() string {
	switch s {
	case SourceBody:
		return "body field session_id"
	case SourceHeader:
		return "header " + HeaderName
	case SourceXArgs:
		return `vllm_xargs["session_id"]`
	default:
		return s.String()
	}
}

// Resolve picks the session id of a request from its body field, its headers
// and its vllm_xargs, in that order, and validates the chosen value.
//
// body is the decoded body field session_id ("" when absent). h may be nil; a
// header value is looked up under the canonical key first and then under any
// other spelling of the name (a raw map built without Header.Set). xargs may be
// nil; a value that is not a string counts as absent.
//
// It returns ("", SourceNone, nil) when no source has a value. When the chosen
// value is invalid it returns "", the source it came from, and an error
// wrapping ErrInvalid whose message names the source and the reason.
func Resolve(body string, h http.Header, xargs map[string]any) (id string, src Source, err error) {
	if body != "" {
		id, src = body, SourceBody
	} else if v := headerValue(h); v != "" {
		id, src = v, SourceHeader
	} else if v, ok := xargs[xargsKey].(string); ok && v != "" {
		id, src = v, SourceXArgs
	}
	if src == SourceNone {
		return "", SourceNone, nil
	}
	if reason := check(id); reason != "" {
		return "", src, fmt.Errorf("%w: %s %s", ErrInvalid, src.describe(), reason)
	}
	return id, src, nil
}

// Validate reports whether id is an acceptable non-empty session id; the error
// wraps ErrInvalid. Resolve already validates what it returns.
func Validate(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalid)
	}
	if reason := check(id); reason != "" {
		return fmt.Errorf("%w: %s", ErrInvalid, reason)
	}
	return nil
}

// headerValue returns the first value stored under the session header, trying
// the canonical key, then other spellings in sorted order (deterministic when a
// hand-built map holds several).
func headerValue(h http.Header) string {
	if v := h.Get(HeaderName); v != "" {
		return v
	}
	var keys []string
	for k := range h {
		if strings.EqualFold(k, HeaderName) && k != http.CanonicalHeaderKey(HeaderName) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if vs := h[k]; len(vs) > 0 && vs[0] != "" {
			return vs[0]
		}
	}
	return ""
}

// check returns why id is invalid, or "" when it is valid.
func check(id string) string {
	if len(id) > MaxLen {
		return fmt.Sprintf("is %d bytes long; at most %d allowed", len(id), MaxLen)
	}
	for i, r := range id {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(id[i:]); size == 1 {
				return fmt.Sprintf("is not valid UTF-8 (byte %d)", i)
			}
		}
		// unicode.IsPrint accepts the ASCII space and rejects every other
		// space, control, format and unassigned character.
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("contains a non-printable character %U at byte %d", r, i)
		}
	}
	return ""
}
