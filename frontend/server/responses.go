package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/responses"
)

// responseCall is one POST /v1/responses in flight: what the handler and
// the streaming writer share.
type responseCall struct {
	resp     openai.Response     // the response object, filled as it completes
	msgID    string              // msg_… id of the output message
	history  []responses.Message // the stored conversation it continues
	input    []responses.Message // this request's input messages
	store    bool
	logprobs bool   // output_text carries logprobs (top_logprobs set)
	owner    string // the caller's tenant, stored with the response
}

// createResponse serves POST /v1/responses: the input (with the stored
// conversation of previous_response_id, and instructions as a system
// message) is rendered with the chat template and generated like a chat
// completion with one choice.
func (s *Server) createResponse(c echo.Context) error {
	var req openai.ResponsesRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	call := &responseCall{store: req.Stored(), input: inputMessages(&req), msgID: "msg_" + cm.baseID, owner: tenantOf(c)}
	if id := req.PreviousResponseID; id != "" {
		prev, ok := s.store.Get(id)
		if !ok || prev.Owner != tenantOf(c) {
			e := openai.BadRequest("previous_response_id", "Previous response with id '%s' not found.", id)
			e.Code = openai.CodeResponseNotFound
			return writeError(c, e)
		}
		call.history = prev.Messages
	}
	chat := &openai.ChatCompletionRequest{Tools: req.Tools}
	if req.Instructions != "" {
		chat.Messages = append(chat.Messages, openai.ChatMessage{Role: "system", Content: openai.Content{Text: req.Instructions}})
	}
	for _, m := range append(append([]responses.Message(nil), call.history...), call.input...) {
		chat.Messages = append(chat.Messages, openai.ChatMessage{Role: m.Role, Content: openai.Content{Text: m.Content}})
	}
	if len(chat.Messages) == 0 {
		return writeError(c, openai.BadRequest("input", "'input' is empty and there are no instructions or previous messages."))
	}
	text, e := s.renderChat(chat)
	if e != nil {
		e.Param = ptr("input")
		return writeError(c, e)
	}
	prompt := s.truncatePrompt(&req.Params, s.tok.Encode(text, req.AddSpecial(false)))
	maxOut, set := req.MaxOutput()
	maxTokens, e := s.checkLength(len(prompt), maxOut, set)
	if e != nil {
		if e.Param != nil && *e.Param == "max_tokens" {
			e.Param = ptr("max_output_tokens")
		}
		return writeError(c, e)
	}
	lp := req.TopLogprobs
	call.logprobs = lp != nil
	sp, e := samplingParams(&req.Params, maxTokens, lp, s.tok.EOS())
	if e != nil {
		return writeError(c, e)
	}
	id := "resp_" + cm.baseID
	g := &genRequest{
		internalID:  id + "-" + randomHex(4),
		externalID:  id,
		prompt:      prompt,
		params:      sp,
		n:           1,
		sessionID:   cm.sessionID,
		source:      cm.source,
		cacheSalt:   req.CacheSalt,
		priority:    req.Priority,
		rank:        cm.rank,
		stops:       req.Stop,
		includeStop: req.IncludeStopStr,
		skipSpecial: req.SkipSpecial(),
	}
	call.resp = s.newResponse(&req, id)
	gens := []*genRequest{g}
	if req.Stream {
		return s.streamResponse(c, gens, call)
	}
	res, err := s.collect(c.Request().Context(), gens, s.startAll)
	if err != nil {
		return respondCollected(c, nil, err)
	}
	s.finishResponse(call, res[0], usageOf(gens, res))
	return c.JSON(http.StatusOK, call.resp)
}

// inputMessages turns the request's input into conversation messages; the
// developer role is rendered as system, which every template knows.
func inputMessages(req *openai.ResponsesRequest) []responses.Message {
	if req.Input.Text != nil {
		return []responses.Message{{Role: "user", Content: *req.Input.Text}}
	}
	out := make([]responses.Message, len(req.Input.Items))
	for i, it := range req.Input.Items {
		role := it.Role
		if role == "developer" {
			role = "system"
		}
		out[i] = responses.Message{Role: role, Content: it.Content.Text}
	}
	return out
}

// newResponse is the in-progress response object of req.
func (s *Server) newResponse(req *openai.ResponsesRequest, id string) openai.Response {
	one := 1.0
	r := openai.Response{
		ID: id, Object: openai.ObjectResponse, CreatedAt: nowUnix(), Status: openai.ResponseStatusInProgress,
		MaxOutputTokens: req.MaxOutputTokens, Model: s.cfg.ServedModelName, ParallelToolCalls: true,
		Reasoning: &openai.ResponseReasoning{}, Store: req.Stored(), Temperature: req.Temperature, TopP: req.TopP,
		Text:       openai.ResponseTextConfig{Format: &openai.ResponseFormat{Type: "text"}},
		ToolChoice: req.ToolChoice, Tools: req.Tools, TopLogprobs: req.TopLogprobs, Truncation: "disabled",
		Metadata: req.Metadata,
	}
	if r.Temperature == nil {
		r.Temperature = &one
	}
	if r.TopP == nil {
		r.TopP = &one
	}
	if req.ParallelToolCalls != nil {
		r.ParallelToolCalls = *req.ParallelToolCalls
	}
	if req.Truncation != "" {
		r.Truncation = req.Truncation
	}
	if req.Instructions != "" {
		r.Instructions = ptr(req.Instructions)
	}
	if req.PreviousResponseID != "" {
		r.PreviousResponseID = ptr(req.PreviousResponseID)
	}
	if req.User != "" {
		r.User = ptr(req.User)
	}
	return r
}

// outputItem is the response's output message with text so far.
func (call *responseCall) outputItem(text string, lps []openai.ChatTokenLogprob, status string) openai.ResponseOutputItem {
	return openai.ResponseOutputItem{Type: "message", ID: call.msgID, Status: status, Role: "assistant",
		Content: []openai.ResponseOutputText{{Type: "output_text", Text: text, Logprobs: lps}}}
}

// finishResponse completes call.resp with the finished choice r and
// stores it when asked.
func (s *Server) finishResponse(call *responseCall, r *choiceResult, u openai.Usage) {
	text := r.text.String()
	var lps []openai.ChatTokenLogprob
	if call.logprobs {
		lps = chatTokenLogprobs(r.logprobs)
	}
	status := openai.ResponseStatusCompleted
	if r.finish == openai.FinishLength {
		status = openai.ResponseStatusIncomplete
		call.resp.IncompleteDetails = &openai.IncompleteDetails{Reason: "max_output_tokens"}
	}
	call.resp.Status = status
	call.resp.Output = []openai.ResponseOutputItem{call.outputItem(text, lps, status)}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	call.resp.Usage = &openai.ResponseUsage{
		InputTokens: u.PromptTokens, InputTokensDetails: openai.InputTokensDetails{CachedTokens: cached},
		OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
	}
	if call.store {
		msgs := append(append(append([]responses.Message(nil), call.history...), call.input...), responses.Message{Role: "assistant", Content: text})
		s.store.Put(responses.Entry{Response: call.resp, Messages: msgs, Owner: call.owner}, len(call.input)+1)
	}
}

// responseID checks the :id of /v1/responses/:id.
func responseID(c echo.Context) (string, *openai.Error) {
	id := c.Param("id")
	if !strings.HasPrefix(id, "resp_") {
		return "", openai.NotFound("response_id", "Response with id '%s' not found.", id)
	}
	return id, nil
}

// getResponse serves GET /v1/responses/{id} from the store.
func (s *Server) getResponse(c echo.Context) error {
	id, e := responseID(c)
	if e != nil {
		return writeError(c, e)
	}
	entry, ok := s.store.Get(id)
	if !ok || entry.Owner != tenantOf(c) { // another tenant's: as unknown
		return writeError(c, openai.NotFound("response_id", "Response with id '%s' not found.", id))
	}
	return c.JSON(http.StatusOK, entry.Response)
}

// deleteResponse serves DELETE /v1/responses/{id}.
func (s *Server) deleteResponse(c echo.Context) error {
	id, e := responseID(c)
	if e != nil {
		return writeError(c, e)
	}
	if entry, ok := s.store.Get(id); !ok || entry.Owner != tenantOf(c) || !s.store.Delete(id) {
		return writeError(c, openai.NotFound("response_id", "Response with id '%s' not found.", id))
	}
	return c.JSON(http.StatusOK, openai.ResponseDeleted{ID: id, Object: openai.ObjectResponseDeleted, Deleted: true})
}

func ptr[T any](v T) *T { return &v }
