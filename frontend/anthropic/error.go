package anthropic

import (
	"encoding/json"
	"net/http"
)

// Error is an error in Anthropic's shape:
//
//	{"type":"error","error":{"type":"invalid_request_error","message":"…"}}
//
// sent with its HTTP status, or as a stream's `event: error`.
type Error struct {
	Status  int    // HTTP status
	Type    string // Anthropic's error type (TypeOf the status)
	Message string
}

// NewError is the error of an HTTP status with Anthropic's type for it.
func NewError(status int, message string) Error {
	return Error{Status: status, Type: TypeOf(status), Message: message}
}

// TypeOf is Anthropic's error type of an HTTP status: 400
// invalid_request_error, 401 authentication_error, 403 permission_error,
// 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 503 and
// 529 overloaded_error, 504 timeout_error, other 5xx api_error (and other
// 4xx invalid_request_error).
func TypeOf(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// MarshalJSON writes the error body.
func (e Error) MarshalJSON() ([]byte, error) {
	type detail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	return json.Marshal(struct {
		Type  string `json:"type"`
		Error detail `json:"error"`
	}{"error", detail{e.Type, e.Message}})
}

// Error implements error.
func (e Error) Error() string { return "anthropic: " + e.Type + ": " + e.Message }
