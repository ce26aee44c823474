package server

import (
	"encoding/json"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// batchChat serves POST /v1/chat/completions/batch, vLLM's batch chat:
// the body is a chat request whose messages is a list of conversations;
// each is generated on its own, with the request's other fields, and the
// answer is one chat completion with choice i for conversation i and the
// usage of them all. As in vLLM, beam search and n > 1 are refused; so
// are stream and tools, which vLLM's batch request does not have.
func (s *Server) batchChat(c echo.Context) error {
	body, e := readBatchBody(c)
	if e != nil {
		return writeError(c, e)
	}
	var fields map[string]json.RawMessage
	if e := openai.Decode(body, &fields); e != nil {
		return writeError(c, e)
	}
	var convs []json.RawMessage
	if err := json.Unmarshal(fields["messages"], &convs); err != nil || len(convs) == 0 {
		return writeError(c, openai.BadRequest("messages", "'messages' must be a non-empty list of conversations, each a list of messages."))
	}
	var head struct {
		N             *int            `json:"n"`
		UseBeamSearch bool            `json:"use_beam_search"`
		Stream        bool            `json:"stream"`
		Tools         json.RawMessage `json:"tools"`
		ToolChoice    json.RawMessage `json:"tool_choice"`
	}
	_ = json.Unmarshal(body, &head) // Decode has checked the body
	switch {
	case head.UseBeamSearch:
		return writeError(c, openai.BadRequest("use_beam_search", "Batch chat completions do not support beam search. Please set `use_beam_search` to False."))
	case head.N != nil && *head.N != 1:
		return writeError(c, openai.BadRequest("n", "Batch chat completions do not support `n > 1`. Please set `n` to 1."))
	case head.Stream:
		return writeError(c, openai.BadRequest("stream", "Batch chat completions do not support streaming."))
	case present(head.Tools) && string(head.Tools) != "[]":
		return writeError(c, openai.BadRequest("tools", "Batch chat completions do not support tools."))
	case present(head.ToolChoice) && string(head.ToolChoice) != `"none"`:
		return writeError(c, openai.BadRequest("tool_choice", "Batch chat completions take only tool_choice \"none\"."))
	}
	reqs := make([]*openai.ChatCompletionRequest, len(convs))
	for i, conv := range convs {
		fields["messages"] = conv
		one, _ := json.Marshal(fields) // re-marshalling decoded JSON cannot fail
		reqs[i] = &openai.ChatCompletionRequest{}
		if e := openai.Decode(one, reqs[i]); e != nil {
			return writeError(c, inConversation(e, i))
		}
		if e := reqs[i].Validate(); e != nil {
			return writeError(c, inConversation(e, i))
		}
	}
	cm, e := s.resolveCommon(c, &reqs[0].Params)
	if e != nil {
		return writeError(c, e)
	}
	id := "chatcmpl-" + cm.baseID
	gens := make([]*genRequest, len(reqs))
	thinks := make([]*thinker, len(reqs))
	for i, req := range reqs {
		req.CacheSalt = reqs[0].CacheSalt // resolveCommon scoped the first's to the tenant
		g, think, e := s.batchGen(req, cm, fmt.Sprintf("%s_%d", id, i))
		if e != nil {
			return writeError(c, inConversation(e, i))
		}
		g.firstIndex = i
		gens[i], thinks[i] = g, think
	}
	res, err := s.collect(c.Request().Context(), gens, s.startAll, s.tokensAsIDs(&reqs[0].Params))
	if err != nil {
		return respondCollected(c, nil, err)
	}
	out := openai.ChatCompletion{ID: id, Object: openai.ObjectChatCompletion, Created: nowUnix(), Model: s.cfg.ServedModelName,
		Usage: usageOf(gens, res), SystemFingerprint: s.fingerprint}
	for i, r := range res {
		thought, text := thinks[i].split(r.text.String())
		content := batchEcho(reqs[i]) + text
		ch := openai.ChatChoice{Index: i, Message: openai.AssistantMessage{Role: "assistant", Content: &content},
			FinishReason: r.finish, StopReason: r.stopReason}
		withReasoning(&ch.Message, thought, reqs[i].IncludeReasoning)
		if reqs[i].Logprobs {
			ch.Logprobs = chatLogprobs(sampledTopIf(len(reqs[i].Params.LogprobTokenIDs) > 0, r.logprobs))
		}
		if reqs[i].ReturnTokenIDs {
			ch.TokenIDs = nonNilIDs(r.tokenIDs)
		}
		out.Choices = append(out.Choices, ch)
	}
	return respondCollected(c, out, nil)
}

// readBatchBody reads a generation body and refuses the vLLM features
// Tandem does not have, as readRequest does.
func readBatchBody(c echo.Context) ([]byte, *openai.Error) {
	body, err := readAll(c.Request())
	if err != nil {
		return nil, openai.BadRequest("", "reading request body: %v", err)
	}
	return body, openai.CheckUnsupported(body)
}

// batchGen prepares one conversation of a batch as a one-choice chat
// request, with the split of its answer into reasoning and content.
func (s *Server) batchGen(req *openai.ChatCompletionRequest, cm common, internalID string) (*genRequest, *thinker, *openai.Error) {
	text, e := s.renderChat(req)
	if e != nil {
		return nil, nil, e
	}
	prompt := s.truncatePrompt(&req.Params, s.tok.Encode(text, req.AddSpecial(false)))
	maxOut, set := req.MaxOutputTokens()
	maxTokens, e := s.checkLength(len(prompt), maxOut, set)
	if e != nil {
		return nil, nil, e
	}
	lp := req.SampleLogprobs()
	if e := s.checkLogprobParams(&req.Params, lp); e != nil {
		return nil, nil, e
	}
	sp, e := samplingParams(&req.Params, maxTokens, lp, s.tok.EOS())
	if e != nil {
		return nil, nil, e
	}
	think := s.thinkerFor(text, &sp, thinkOptionsOf(&req.Params, false))
	return &genRequest{internalID: internalID, externalID: internalID, prompt: prompt, params: sp, n: 1,
		sessionID: cm.sessionID, source: cm.source, cacheSalt: req.CacheSalt, priority: req.Priority, rank: cm.rank,
		stops: req.Stop, includeStop: req.IncludeStopStr, skipSpecial: skipSpecialOf(req.SkipSpecialTokens, nil, think), lora: cm.lora}, think, nil
}

// batchEcho is what echo prepends to a conversation's answer: its last
// message when it is the assistant's.
func batchEcho(req *openai.ChatCompletionRequest) string {
	if last := req.Messages[len(req.Messages)-1]; req.Echo && last.Role == "assistant" {
		return last.Content.Text
	}
	return ""
}

// inConversation says which conversation of a batch e is about.
func inConversation(e *openai.Error, i int) *openai.Error {
	c := *e
	c.Message = fmt.Sprintf("conversation %d: %s", i, e.Message)
	return &c
}
