// Package responses is the in-memory store behind the Responses API's
// `store` and `previous_response_id`: a bounded LRU of finished responses,
// each with the conversation that produced it, so a follow-up request can
// continue it and GET /v1/responses/{id} can return it.
//
// The store is per frontend process and lost on restart, like vLLM's; with
// several frontends a follow-up must reach the frontend that answered the
// previous turn (or the client resends the history). It is bounded by
// entries and by bytes of message text; the least recently used entries go
// first.
//
// It imports frontend/openai (the Response type) and nothing else from this
// repository.
//
//	st := responses.NewStore(responses.Limits{MaxEntries: 1024, MaxBytes: 64 << 20})
//	st.Put(entry)
//	prev, ok := st.Get("resp_abc")
//	msgs := append(prev.Messages, next...)
package responses
