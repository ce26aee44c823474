package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/responses"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// responseCall is one POST /v1/responses in flight: what the handler and
// the streaming writer share.
type responseCall struct {
	resp      openai.Response     // the response object, filled as it completes
	baseID    string              // the request's id: resp_<baseID>, msg_<baseID>, fc_<baseID>_<n>
	history   []responses.Message // the stored conversation it continues
	input     []responses.Message // this request's input messages
	store     bool
	stream    bool   // a background response streams (into an event log)
	logprobs  bool   // output_text carries logprobs (top_logprobs set)
	timings   bool   // llama.cpp's timings_per_token: timings on a stream's text deltas and its end
	owner     string // the caller's tenant, stored with the response
	plan      openai.ToolPlan
	names     map[string]openai.ToolCallName // namespace functions by the flat name the model writes
	auto      *toolparse.Format              // reads calls out of tool_choice "auto" answers; nil: none
	think     *thinker                       // splits the reasoning off the answer; nil: none
	newCallID func() string                  // call_… ids of function_call items
	// rawMessages (enable_response_messages) fills the response's
	// input_messages from promptText and prompt, and output_messages from
	// outText and outTokens, which the generation fills.
	rawMessages bool
	promptText  string
	prompt      []int32
	outText     strings.Builder
	outTokens   []int32
}

// createResponse serves POST /v1/responses: the input (with the stored
// conversation of previous_response_id, and instructions as a system
// message) is rendered with the chat template and generated like a chat
// completion with one choice, tools and tool_choice as in chat; the answer
// becomes message and function_call items (outputItems).
func (s *Server) createResponse(c echo.Context) error {
	var req openai.ResponsesRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	plan, e := req.ToolPlanOf() // validated
	if e != nil {
		return writeError(c, e)
	}
	call := &responseCall{store: req.Stored(), input: inputMessages(&req), baseID: cm.baseID, owner: tenantOf(c),
		plan: plan, names: req.ToolCallNames(), auto: s.autoTools(plan), newCallID: s.responseCallIDs()}
	if id := req.PreviousResponseID; id != "" {
		prev, ok := s.store.Get(id)
		if !ok || prev.Owner != tenantOf(c) {
			e := openai.BadRequest("previous_response_id", "Previous response with id '%s' not found.", id)
			e.Code = openai.CodeResponseNotFound
			return writeError(c, e)
		}
		call.history = prev.Messages
	}
	chat := &openai.ChatCompletionRequest{}
	if req.Reasoning != nil {
		chat.ReasoningEffort = req.Reasoning.Effort
	}
	if tools, _ := req.FunctionTools(); len(tools) > 0 {
		chat.Tools, _ = json.Marshal(tools) // chat's form, as the template expects
	}
	if req.Instructions != "" {
		chat.Messages = append(chat.Messages, openai.ChatMessage{Role: "system", Content: openai.Content{Text: req.Instructions}})
	}
	for _, m := range append(append([]responses.Message(nil), call.history...), call.input...) {
		chat.Messages = append(chat.Messages, chatMessage(m))
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
	if e := s.checkMaxLogprobs("top_logprobs", lp); e != nil {
		return writeError(c, e)
	}
	call.logprobs, call.timings = lp != nil, req.TimingsPerToken
	sp, e := samplingParams(&req.Params, maxTokens, lp, s.tok.EOS())
	if e != nil {
		return writeError(c, e)
	}
	if plan.Constraint != nil {
		sp.StructuredOutputs = plan.Constraint
	}
	call.think = s.thinkerFor(text, &sp, thinkOptionsOf(&req.Params, false))
	sp.ReturnProgress = req.ReturnProgress && req.Stream && !req.Background
	id := "resp_" + cm.baseID
	g := cm.newGen(id, prompt, sp, &req.Params, skipSpecialOf(req.SkipSpecialTokens, call.auto, call.think))
	g.includeStop = req.IncludeStopStr
	call.resp = s.newResponse(&req, id)
	call.rawMessages, call.promptText, call.prompt = req.EnableResponseMessages, text, prompt
	gens := []*genRequest{g}
	if req.Background {
		call.stream = req.Stream
		return s.startBackground(c, gens, call)
	}
	if req.Stream {
		return s.streamResponse(c, gens, call)
	}
	if err := s.generateResponse(c.Request().Context(), gens, call); err != nil {
		return respondCollected(c, nil, err)
	}
	return c.JSON(http.StatusOK, call.resp)
}

// generateResponse generates call's answer and finishes call.resp with it.
func (s *Server) generateResponse(ctx context.Context, gens []*genRequest, call *responseCall) error {
	res, err := s.collect(ctx, gens, s.startAll, false)
	if err != nil {
		return err
	}
	out := call.newOutput(nil)
	var lps []openai.ChatTokenLogprob
	if call.logprobs {
		lps = chatTokenLogprobs(res[0].logprobs)
	}
	out.text(res[0].text.String(), lps)
	call.outText.WriteString(res[0].text.String())
	call.outTokens = res[0].tokenIDs
	s.finishResponse(call, out.end(res[0].finish), res[0].finish, usageOf(gens, res))
	return nil
}

// inputMessages turns the request's input into conversation turns: the
// developer role is rendered as system, which every template knows; a
// function_call item joins the assistant turn before it (the text and
// calls of one answer are one turn, as in chat), or starts one; a
// function_call_output is a "tool" turn.
func inputMessages(req *openai.ResponsesRequest) []responses.Message {
	if req.Input.Text != nil {
		return []responses.Message{{Role: "user", Content: *req.Input.Text}}
	}
	out := make([]responses.Message, 0, len(req.Input.Items))
	for _, it := range req.Input.Items {
		switch it.Type {
		case openai.ItemFunctionCall:
			name := openai.ToolCallName{Name: it.Name, Namespace: it.Namespace}.Flat() // the name the model wrote
			tc := openai.ToolCall{ID: it.CallID, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: it.Arguments}}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, tc)
				continue
			}
			out = append(out, responses.Message{Role: "assistant", ToolCalls: []openai.ToolCall{tc}})
		case openai.ItemFunctionCallOutput:
			out = append(out, responses.Message{Role: "tool", Content: it.Output.Text, ToolCallID: it.CallID})
		case openai.ItemReasoning: // the assistant turn's reasoning, as vLLM: it joins the turn before it if that has none
			if n := len(out); n > 0 && out[n-1].Role == "assistant" && out[n-1].Reasoning == "" {
				out[n-1].Reasoning = it.ReasoningText()
				continue
			}
			out = append(out, responses.Message{Role: "assistant", Reasoning: it.ReasoningText()})
		default:
			role := it.Role
			if role == "developer" {
				role = "system"
			}
			if n := len(out); role == "assistant" && n > 0 && out[n-1].Role == "assistant" && out[n-1].Content == "" && len(out[n-1].ToolCalls) == 0 {
				out[n-1].Content = it.Content.Text // the answer after its reasoning item
				continue
			}
			out = append(out, responses.Message{Role: role, Content: it.Content.Text})
		}
	}
	return out
}

// chatMessage is a conversation turn as a chat message. A turn with calls
// or a call's result carries them as chat's tool_calls (content null when
// there is no text) and tool_call_id, and one with reasoning carries it,
// for the template, as vLLM passes them.
func chatMessage(m responses.Message) openai.ChatMessage {
	msg := openai.ChatMessage{Role: m.Role, Content: openai.Content{Text: m.Content}}
	if len(m.ToolCalls) == 0 && m.ToolCallID == "" && m.Reasoning == "" {
		return msg
	}
	raw := struct {
		Role       string            `json:"role"`
		Content    *string           `json:"content"`
		ToolCalls  []openai.ToolCall `json:"tool_calls,omitempty"`
		ToolCallID string            `json:"tool_call_id,omitempty"`
		// Reasoning is the turn's reasoning under both names templates
		// read: vLLM's "reasoning" and the older "reasoning_content".
		Reasoning        string `json:"reasoning,omitempty"`
		ReasoningContent string `json:"reasoning_content,omitempty"`
	}{Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Reasoning: m.Reasoning, ReasoningContent: m.Reasoning}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		raw.Content = &m.Content
	}
	msg.Raw, _ = json.Marshal(raw)
	return msg
}

// responseCallIDs returns the call id maker of function_call items:
// call_<24 hex digits>, or the 9-character ids of a format whose
// templates take only those.
func (s *Server) responseCallIDs() func() string {
	if f := s.cfg.ToolParser; f != nil && f.ShortIDs {
		return shortToolCallID
	}
	return func() string { return "call_" + randomHex(12) }
}

// newResponse is the in-progress response object of req.
func (s *Server) newResponse(req *openai.ResponsesRequest, id string) openai.Response {
	one := 1.0
	r := openai.Response{
		ID: id, Object: openai.ObjectResponse, CreatedAt: nowUnix(), Status: openai.ResponseStatusInProgress,
		MaxOutputTokens: req.MaxOutputTokens, Model: s.cfg.ServedModelName, ParallelToolCalls: true,
		Reasoning: reasoningEcho(req.Reasoning), Store: req.Stored(), Temperature: req.Temperature, TopP: req.TopP,
		Text:       openai.ResponseTextConfig{Format: &openai.ResponseFormat{Type: "text"}},
		ToolChoice: req.ToolChoice, Tools: req.Tools, TopLogprobs: req.TopLogprobs, Truncation: "disabled",
		Metadata: req.Metadata, Background: req.Background,
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

// finishResponse completes call.resp with its output items, the answer's
// finish reason and usage, and stores it when asked.
func (s *Server) finishResponse(call *responseCall, items []openai.ResponseOutputItem, finish string, u openai.Usage) {
	call.resp.Status = responseStatus(finish)
	if call.resp.Status == openai.ResponseStatusIncomplete {
		call.resp.IncompleteDetails = &openai.IncompleteDetails{Reason: "max_output_tokens"}
	}
	call.resp.Output = items
	if call.rawMessages {
		call.resp.InputMessages = []openai.RawMessageTokens{{Type: "raw_message_tokens", Message: call.promptText, Tokens: nonNilIDs(call.prompt)}}
		call.resp.OutputMessages = []openai.RawMessageTokens{}
		if call.outText.Len() > 0 || len(call.outTokens) > 0 {
			call.resp.OutputMessages = append(call.resp.OutputMessages, openai.RawMessageTokens{Type: "raw_message_tokens", Message: call.outText.String(), Tokens: nonNilIDs(call.outTokens)})
		}
	}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	call.resp.Usage = &openai.ResponseUsage{
		InputTokens: u.PromptTokens, InputTokensDetails: openai.InputTokensDetails{CachedTokens: cached},
		OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
	}
	if call.store {
		msgs := append(append(append([]responses.Message(nil), call.history...), call.input...), assistantTurn(items))
		e := responses.Entry{Response: call.resp, Messages: msgs, Owner: call.owner}
		if call.resp.Background { // unless it was cancelled or deleted meanwhile
			s.store.PutIf(e, len(call.input)+1, func(cur responses.Entry) bool { return running(cur.Response.Status) })
		} else {
			s.store.Put(e, len(call.input)+1)
		}
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
	stream, after, e := streamQuery(c)
	if e != nil {
		return writeError(c, e)
	}
	entry, ok := s.store.Get(id)
	if !ok || entry.Owner != tenantOf(c) { // another tenant's: as unknown
		return writeError(c, openai.NotFound("response_id", "Response with id '%s' not found.", id))
	}
	if stream {
		l, ok := s.eventLogs.get(id)
		if !ok { // vLLM's answer for a response it has no events of
			return writeError(c, openai.BadRequest("response_id", "Unknown response_id: %s", id))
		}
		return replay(c, l, after)
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
	if cancel, ok := s.background.Load(id); ok { // a background response still generating stops
		cancel.(context.CancelFunc)()
	}
	s.eventLogs.remove(id)
	return c.JSON(http.StatusOK, openai.ResponseDeleted{ID: id, Object: openai.ObjectResponseDeleted, Deleted: true})
}

func ptr[T any](v T) *T { return &v }

// reasoningEcho is a response's reasoning: the request's effort.
func reasoningEcho(r *openai.ResponseReasoning) *openai.ResponseReasoning {
	if r == nil {
		return &openai.ResponseReasoning{}
	}
	return &openai.ResponseReasoning{Effort: r.Effort}
}
