package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"reflect"
	"strings"
)

// Error types, as OpenAI names them.
const (
	TypeInvalidRequest = "invalid_request_error" // every 4xx but 401
	// TypeAuthentication is a 401's type, as llama-server and Anthropic
	// name it (clients tell errors apart by status and code, which stays
	// OpenAI's invalid_api_key).
	TypeAuthentication = "authentication_error"
	// TypeExceedContextSize is a prompt over the context, as llama-server
	// names it (the code stays OpenAI's context_length_exceeded).
	TypeExceedContextSize = "exceed_context_size_error"
	TypeServer            = "server_error" // every 5xx
)

// Error codes, as OpenAI names them (the "code" field).
const (
	CodeContextLengthExceeded = "context_length_exceeded"
	CodeModelNotFound         = "model_not_found"
	CodeInvalidAPIKey         = "invalid_api_key"
	CodeRateLimitExceeded     = "rate_limit_exceeded"
	CodeResponseNotFound      = "previous_response_not_found"
)

// Error is an API error: an HTTP status and the OpenAI error body. Handlers
// return it; the server renders it with JSON.
type Error struct {
	Status  int     // HTTP status code
	Message string  // human-readable message
	Type    string  // TypeInvalidRequest or TypeServer
	Param   *string // offending request field ("temperature", "messages[2].content"), or nil
	Code    any     // OpenAI code, a string such as CodeContextLengthExceeded, or nil
	// NPromptTokens and NCtx are llama-server's numbers on a prompt over
	// the context (tokens; 0 = absent).
	NPromptTokens, NCtx int
}

// Error implements error.
func (e *Error) Error() string {
	if e.Param != nil {
		return fmt.Sprintf("openai: %d %s (param %s): %s", e.Status, e.Type, *e.Param, e.Message)
	}
	return fmt.Sprintf("openai: %d %s: %s", e.Status, e.Type, e.Message)
}

// errorBody is the wire shape {"error":{message,type,param,code}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
	// llama-server's, on exceed_context_size_error (tokens)
	NPromptTokens int `json:"n_prompt_tokens,omitempty"`
	NCtx          int `json:"n_ctx,omitempty"`
}

// MarshalJSON renders the OpenAI error body.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorBody{Error: errorDetail{Message: e.Message, Type: e.Type, Param: e.Param, Code: e.Code, NPromptTokens: e.NPromptTokens, NCtx: e.NCtx}})
}

// JSON returns the OpenAI error body. A Code that cannot be marshalled is
// rendered as null rather than failing.
func (e *Error) JSON() []byte {
	b, err := e.MarshalJSON()
	if err != nil {
		c := *e
		c.Code = nil
		b, _ = c.MarshalJSON()
	}
	return b
}

func newError(status int, typ, param string, code any, format string, args []any) *Error {
	e := &Error{Status: status, Type: typ, Code: code, Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = &param
	}
	return e
}

// BadRequest returns a 400 invalid_request_error. param names the offending
// field ("" for none).
func BadRequest(param, format string, args ...any) *Error {
	return newError(http.StatusBadRequest, TypeInvalidRequest, param, nil, format, args)
}

// NotFound returns a 404 invalid_request_error.
func NotFound(param, format string, args ...any) *Error {
	return newError(http.StatusNotFound, TypeInvalidRequest, param, nil, format, args)
}

// ModelNotFound returns the 404 for a request naming a model that is not
// served.
func ModelNotFound(model string) *Error {
	return newError(http.StatusNotFound, TypeInvalidRequest, "model", CodeModelNotFound,
		"The model `%s` does not exist.", []any{model})
}

// Unauthorized returns a 401 for a missing or wrong API key.
func Unauthorized(format string, args ...any) *Error {
	return newError(http.StatusUnauthorized, TypeAuthentication, "", CodeInvalidAPIKey, format, args)
}

// TooManyRequests returns a 429: the waiting queue is full
// (--max-waiting-requests). The server adds a Retry-After header.
func TooManyRequests(format string, args ...any) *Error {
	return newError(http.StatusTooManyRequests, TypeInvalidRequest, "", CodeRateLimitExceeded, format, args)
}

// PayloadTooLarge returns a 413: the body is over --max-request-body.
func PayloadTooLarge(format string, args ...any) *Error {
	return newError(http.StatusRequestEntityTooLarge, TypeInvalidRequest, "", nil, format, args)
}

// ServiceUnavailable returns a 503 server_error (no engine, engine dead,
// overloaded).
func ServiceUnavailable(format string, args ...any) *Error {
	return newError(http.StatusServiceUnavailable, TypeServer, "", nil, format, args)
}

// Internal returns a 500 server_error.
func Internal(format string, args ...any) *Error {
	return newError(http.StatusInternalServerError, TypeServer, "", nil, format, args)
}

// ContextLengthExceeded returns the 400 for a prompt of promptTokens tokens
// that does not fit in maxModelLen tokens: OpenAI's code and message,
// llama-server's type and numbers.
func ContextLengthExceeded(promptTokens, maxModelLen int) *Error {
	e := newError(http.StatusBadRequest, TypeExceedContextSize, "", CodeContextLengthExceeded,
		"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input.",
		[]any{maxModelLen, promptTokens})
	e.NPromptTokens, e.NCtx = promptTokens, maxModelLen
	return e
}

// MaxTokensTooLarge returns the 400 for a max_tokens that does not fit next to
// a prompt of promptTokens tokens in maxModelLen tokens.
func MaxTokensTooLarge(maxTokens, promptTokens, maxModelLen int) *Error {
	return newError(http.StatusBadRequest, TypeInvalidRequest, "max_tokens", CodeContextLengthExceeded,
		"'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
		[]any{maxTokens, maxModelLen, promptTokens, maxTokens, maxModelLen, promptTokens})
}

// FromError returns err as an *Error: itself if it is (or wraps) one, else a
// 500 carrying err's message.
func FromError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal("%v", err)
}

// Decode unmarshals the JSON request body into v (a pointer to a request
// type). Unknown fields are ignored. Malformed JSON and values of the wrong
// type become a 400 whose param names the field when encoding/json reports it
// (nested fields are dotted: "stream_options.include_usage",
// "messages.content").
func Decode(body []byte, v any) *Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("", "The request body is empty; expected a JSON object.")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var inv *json.InvalidUnmarshalError
	if errors.As(err, &typ) {
		typ.Field = jsonPath(typ.Field)
	}
	switch {
	case errors.As(err, &syn):
		return BadRequest("", "Invalid JSON in request body at byte %d: %v.", syn.Offset, syn)
	case errors.As(err, &typ) && typ.Field == "":
		return BadRequest("", "The request body must be a JSON object, got %s.", typ.Value)
	case errors.As(err, &typ) && strings.HasPrefix(typ.Value, "number "):
		num := strings.TrimPrefix(typ.Value, "number ")
		if bound := intBound(typ.Type, num); bound != "" {
			return BadRequest(typ.Field, "Invalid value for '%s': %s", typ.Field, bound)
		}
		return BadRequest(typ.Field, "Invalid value for '%s': %s is not %s or is out of range.", typ.Field, num, expected(typ.Type))
	case errors.As(err, &typ):
		return BadRequest(typ.Field, "Invalid type for '%s': expected %s, got %s.", typ.Field, expected(typ.Type), typ.Value)
	case errors.As(err, &inv):
		return Internal("decoding request: %v", err)
	case strings.Contains(err.Error(), "unexpected end of JSON input"):
		return BadRequest("", "Invalid JSON in request body: unexpected end of input.")
	default:
		return BadRequest("", "Invalid request body: %v.", err)
	}
}

// intBound words an integer literal num outside the range of the integer
// type t as pydantic does ("Input should be less than or equal to …
// [type=less_than_equal, …]"): vLLM's tests look for the type names. It
// returns "" when t is not an integer type or num is not an integer literal.
func intBound(t reflect.Type, num string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n, ok := new(big.Int).SetString(num, 10)
	if t == nil || !ok {
		return ""
	}
	lo, hi := new(big.Int), new(big.Int)
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := uint(t.Bits())
		hi.Lsh(big.NewInt(1), bits-1).Sub(hi, big.NewInt(1))
		lo.Lsh(big.NewInt(1), bits-1).Neg(lo)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		hi.Lsh(big.NewInt(1), uint(t.Bits())).Sub(hi, big.NewInt(1))
	default:
		return ""
	}
	switch {
	case n.Cmp(lo) < 0:
		return fmt.Sprintf("Input should be greater than or equal to %s [type=greater_than_equal, input_value=%s, input_type=int].", lo, num)
	case n.Cmp(hi) > 0:
		return fmt.Sprintf("Input should be less than or equal to %s [type=less_than_equal, input_value=%s, input_type=int].", hi, num)
	}
	return ""
}

// jsonPath drops the Go names of embedded structs, which encoding/json puts
// in UnmarshalTypeError.Field ("Params.temperature" → "temperature").
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "Params" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// expected describes the JSON a Go type accepts, for error messages.
func expected(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[Prompt]():
		return "a string, an array of strings, an array of integers or an array of arrays of integers"
	case reflect.TypeFor[Stop]():
		return "a string or an array of strings"
	case reflect.TypeFor[Content]():
		return "a string or an array of content parts"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a different type"
	}
}
