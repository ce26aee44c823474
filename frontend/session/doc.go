// Package session resolves and validates the session_id of an API request.
//
// Every endpoint (chat, completions, responses, batch) calls [Resolve], the one
// place that applies the rules of docs/api.md#session_id, which match vLLM's
// GenerateBaseServing._get_session_id:
//
//  1. the body field session_id, if non-empty;
//  2. else the X-Session-ID header (case-insensitive), if non-empty;
//  3. else vllm_xargs["session_id"], if it is a non-empty string;
//  4. else none.
//
// X-Correlation-ID is never a source. Conflicts between sources are resolved by
// that order, never rejected: only the chosen value is validated, so a request
// whose body carries a good id is accepted even if its header carries garbage.
// A chosen value must be at most [MaxLen] bytes of printable UTF-8 (no control
// characters); otherwise Resolve returns an error wrapping [ErrInvalid], which
// the server turns into a 400 with param "session_id".
//
// The package is pure: it imports neither echo nor anything from enginecore,
// gpu or wire.
//
// Usage:
//
//	id, src, err := session.Resolve(req.SessionID, c.Request().Header, req.VLLMXArgs)
//	if err != nil {
//		return openai.BadRequest("session_id", "%v", err)
//	}
//	_ = src // for logs and metrics
//	// id == "" means the request has no session.
package session
