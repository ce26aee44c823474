package hfhub

import (
	"errors"
	"fmt"
)

// The kinds of failure a caller maps to HTTP statuses; every error of the
// package about a model is an *Error wrapping one of them (or, for
// network failures and cancellation, the cause itself).
var (
	ErrInvalidName  = errors.New("invalid model name")        // 400
	ErrNotFound     = errors.New("not found")                 // 404: no such repository, file or cached model
	ErrUnauthorized = errors.New("unauthorized")              // 401/403: private or gated; a token is missing or lacks access
	ErrNoGGUF       = errors.New("no GGUF file")              // 404: the repository has no model for the tag
	ErrNoCheckpoint = errors.New("no safetensors checkpoint") // 404: no config.json and *.safetensors at the root (PullCheckpoint)
	ErrCorrupt      = errors.New("download is corrupt")       // 502: size or sha256 differs from the hub's
	ErrHub          = errors.New("hub request failed")        // 502: any other status, or an answer we cannot read
)

// Error is a failure about one model; its message names the repository
// and tag.
type Error struct {
	Ref    Ref
	Status int    // the hub's HTTP status; 0 if it did not answer
	Msg    string // detail: the hub's message, the file, what differed
	Err    error  // one of the Err* above, or the cause (a network error, ctx.Err())
}

func (e *Error) Error() string {
	s := "hfhub: " + e.Ref.String() + ": " + e.Err.Error()
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// statusErr is the kind of failure an HTTP status is.
func statusErr(status int) error {
	switch status {
	case 401, 403:
		return ErrUnauthorized
	case 404:
		return ErrNotFound
	}
	return ErrHub
}
