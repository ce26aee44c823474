package server

import (
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// chat serves POST /v1/chat/completions.
func (s *Server) chat(c echo.Context) error {
	var req openai.ChatCompletionRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	text, e := s.renderChat(&req)
	if e != nil {
		return writeError(c, e)
	}
	var prompt []int32
	if kv := req.KVTransferParams; kv != nil && len(kv.PromptTokenIDs) > 0 { // tokenized by a prefill side
		if e := s.checkTokens("kv_transfer_params.prompt_token_ids", kv.PromptTokenIDs); e != nil {
			return writeError(c, e)
		}
		prompt = s.truncatePrompt(&req.Params, slices.Clone(kv.PromptTokenIDs))
	} else {
		prompt = s.truncatePrompt(&req.Params, s.tok.Encode(text, req.AddSpecial(false)))
	}
	maxOut, set := req.MaxOutputTokens()
	maxTokens, e := s.checkLength(len(prompt), maxOut, set)
	if e != nil {
		return writeError(c, e)
	}
	lp := req.SampleLogprobs()
	if e := s.checkLogprobParams(&req.Params, lp); e != nil {
		return writeError(c, e)
	}
	plan := planCandidates(&req.Params, lp)
	sp, e := samplingParams(&req.Params, maxTokens, plan.engineLogprobs, s.tok.EOS())
	if e != nil {
		return writeError(c, e)
	}
	if !req.Stream {
		sp.PromptLogprobs = req.PromptLogprobs
	}
	tools, e := req.ToolPlanOf() // validated: no other constraint with a tool one
	if e != nil {
		return writeError(c, e)
	}
	if tools.Constraint != nil {
		sp.StructuredOutputs = tools.Constraint
	}
	sp.ReturnProgress = req.ReturnProgress && req.Stream && !req.UseBeamSearch // llama.cpp's prompt_progress chunks
	sp.ContextShift = s.contextShift(prompt, 0)
	auto := s.autoTools(tools)
	newID := s.toolIDs()
	think := s.thinkerFor(text, &sp, thinkOptionsOf(&req.Params, req.UseBeamSearch))
	format := s.reasoningFormat(req.ReasoningFormat)
	if format == "none" || format == "deepseek-legacy" && req.Stream {
		think = nil // the think block stays in the content (the engine still follows it)
	}
	id := "chatcmpl-" + cm.baseID
	g := cm.newGen(id, prompt, sp, &req.Params, skipSpecialOf(req.SkipSpecialTokens, auto, think))
	g.n, g.slot, g.includeStop = plan.numGenerated, cm.slot, req.IncludeStopStr
	created := nowUnix()
	gens := []*genRequest{g}
	src := s.sourceFor(&req.Params, lp)
	// echo (a vLLM extension) prepends the last message when it is the
	// assistant's, the role of the generated one.
	echo := ""
	if last := req.Messages[len(req.Messages)-1]; req.Echo && last.Role == "assistant" {
		echo = last.Content.Text
	}
	if req.Stream {
		st := &chatStreamer{id: id, created: created, model: s.cfg.ServedModelName, fingerprint: s.fingerprint, logprobs: req.Logprobs, echo: echo,
			tools: tools, auto: auto, parsers: map[int]toolparse.Parser{}, called: map[int]bool{}, newID: newID, legacy: req.LegacyFunctions,
			think: think, splitters: map[int]*reasoning.Splitter{}, showReasoning: req.IncludeReasoning == nil || *req.IncludeReasoning}
		if req.ReturnTokenIDs {
			st.promptIDs = prompt
		}
		opts := s.streamOptionsOf(&req.Params)
		opts.metrics = s.cfg.EnablePerRequestMetrics && plan.numGenerated == 1
		return s.stream(c, gens, src, st, opts)
	}
	res, err := s.collect(c.Request().Context(), gens, src, s.tokensAsIDs(&req.Params))
	if err != nil {
		return respondCollected(c, nil, err)
	}
	usage := usageOf(gens, res)
	res = plan.pick(gens, res)
	out := openai.ChatCompletion{ID: id, Object: openai.ObjectChatCompletion, Created: created, Model: s.cfg.ServedModelName,
		Usage: usage, SystemFingerprint: s.fingerprint, Metrics: s.requestMetrics(gens, res)}
	if req.TimingsPerToken {
		out.Timings = requestTimings(gens, res)
	}
	if req.ReturnTokenIDs {
		out.PromptTokenIDs = nonNilIDs(prompt)
	}
	if (req.Verbose || s.cfg.Verbose) && len(res) > 0 {
		out.Verbose = &openai.Verbose{Prompt: text, Content: echo + res[0].text.String(), TokensEvaluated: len(prompt),
			TokensPredicted: usage.CompletionTokens, Model: s.cfg.ServedModelName}
	}
	if len(res) > 0 {
		out.PromptLogprobs = s.promptLogprobsOf(res[0].promptLogprobs)
	}
	for i, r := range res {
		thought, text := think.split(r.text.String())
		if format == "deepseek-legacy" {
			text = r.text.String() // the reasoning both apart and in the content
		}
		content := echo + text
		ch := openai.ChatChoice{
			Index:        i,
			Message:      openai.AssistantMessage{Role: "assistant", Content: &content},
			FinishReason: r.finish,
			StopReason:   r.stopReason,
		}
		if calls, ok := tools.ToolCalls(content, newID); ok && r.finish == openai.FinishStop {
			ch.Message.Content, ch.Message.ToolCalls = nil, calls
			if tools.Mode == openai.ToolsRequired { // a named call stays "stop", as OpenAI and vLLM
				ch.FinishReason, ch.StopReason = openai.FinishToolCalls, openai.StopReason{}
			}
		} else if tools.Forced() && r.finish == openai.FinishLength {
			cutToolAnswer(&ch, tools, content, newID)
		} else if auto != nil {
			withToolCalls(&ch, auto, tools, echo, text, newID)
		}
		if req.LegacyFunctions {
			openai.LegacyMessage(&ch)
		}
		withReasoning(&ch.Message, thought, req.IncludeReasoning)
		if req.Logprobs {
			ch.Logprobs = chatLogprobs(sampledTopIf(len(req.Params.LogprobTokenIDs) > 0, r.logprobs))
		}
		if req.ReturnTokenIDs {
			ch.TokenIDs = nonNilIDs(r.tokenIDs)
		}
		out.Choices = append(out.Choices, ch)
	}
	return respondCollected(c, out, nil)
}

func chatLogprobs(lps []tokenLogprob) *openai.ChatLogprobs {
	return &openai.ChatLogprobs{Content: chatTokenLogprobs(lps)}
}

func chatTokenLogprobs(lps []tokenLogprob) []openai.ChatTokenLogprob {
	out := []openai.ChatTokenLogprob{}
	for _, l := range lps {
		e := openai.ChatTokenLogprob{Token: l.token, Bytes: l.bytes, Logprob: openai.Logprob(l.logprob), TopLogprobs: []openai.ChatTopLogprob{}}
		for _, t := range l.top {
			e.TopLogprobs = append(e.TopLogprobs, openai.ChatTopLogprob{Token: t.token, Bytes: t.bytes, Logprob: openai.Logprob(t.logprob)})
		}
		out = append(out, e)
	}
	return out
}

type chatStreamer struct {
	id          string
	created     int64
	model       string
	fingerprint string
	logprobs    bool
	echo        string // content of the first delta of every choice
	// tools: with a tool_choice that makes the answer calls (required or
	// named), each choice's calls are streamed as they are written, read
	// by a forced parser per choice in parsers.
	tools openai.ToolPlan
	// auto reads calls out of tool_choice "auto" answers (nil: none),
	// with a parser per choice; called: the choice has sent a call.
	auto    *toolparse.Format
	parsers map[int]toolparse.Parser
	called  map[int]bool
	newID   func() string // call ids
	legacy  bool          // the request came with functions: calls go out as function_call
	// think splits each choice's answer into reasoning and content (nil:
	// none), with a splitter per choice; showReasoning: include_reasoning.
	think         *thinker
	splitters     map[int]*reasoning.Splitter
	showReasoning bool
	// promptIDs, with return_token_ids, go on each choice's first chunk,
	// and each chunk carries its tokens: those of events that sent no
	// chunk (a character's first bytes) wait in heldIDs for the next.
	promptIDs []int32
	heldIDs   map[int][]int32
	// scratch holds the plain path's chunk, reused from token to token
	// (stream writes each chunk before it asks for the next), so a token
	// costs no chunk, choice or string allocations.
	scratch struct {
		chunk        openai.ChatCompletionChunk
		choices      [1]openai.ChatChunkChoice
		text, finish string
	}
}

func (cs *chatStreamer) base() openai.ChatCompletionChunk {
	return openai.ChatCompletionChunk{ID: cs.id, Object: openai.ObjectChatCompletionChunk, Created: cs.created, Model: cs.model, SystemFingerprint: cs.fingerprint}
}

// progress is a role chunk without content, which llama-server sends
// with prompt_progress.
func (cs *chatStreamer) progress(index int) any {
	return openai.ChatRoleChunk{ChatCompletionChunk: cs.base(), Choices: []openai.ChatRoleChoice{{Index: index, Delta: openai.ChatRoleDelta{Role: "assistant"}}}}
}

func (cs *chatStreamer) first(index int, u *openai.Usage) any {
	ch := cs.base()
	// The role chunk's content is null unless it echoes the last message:
	// llama-server's clients refuse an empty content delta (and read the
	// key), and vLLM's and OpenAI's accept a role-only chunk.
	d := openai.ChatRoleDelta{Role: "assistant"}
	if cs.echo != "" {
		echo := cs.echo
		d.Content = &echo
	}
	ch.Usage = u
	ch.PromptTokenIDs = cs.promptIDs
	return openai.ChatRoleChunk{ChatCompletionChunk: ch, Choices: []openai.ChatRoleChoice{{Index: index, Delta: d}}}
}

func (cs *chatStreamer) chunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	if cs.think != nil {
		return cs.thinkChunk(ev, lps, u)
	}
	return cs.contentChunk(ev, lps, u)
}

// contentChunk is an event's chunk of content (calls read out of it, or
// forced calls).
func (cs *chatStreamer) contentChunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	switch {
	case cs.auto != nil:
		return cs.autoChunk(ev, lps, u)
	case cs.tools.Constraint != nil:
		return cs.toolChunk(ev, u)
	}
	if ev.text == "" && ev.finish == "" && len(lps) == 0 {
		if cs.promptIDs != nil {
			cs.heldIDs = holdIDs(cs.heldIDs, ev.index, ev.tokenIDs)
		}
		return nil
	}
	sc := &cs.scratch
	choice := openai.ChatChunkChoice{Index: ev.index}
	if ev.text != "" { // never an empty content delta: a chunk of logprobs only has none
		sc.text = ev.text
		choice.Delta.Content = &sc.text
	}
	if cs.logprobs {
		choice.Logprobs = chatLogprobs(lps)
	}
	if ev.finish != "" {
		sc.finish = ev.finish
		choice.FinishReason = &sc.finish
		choice.StopReason = stopReasonOf(ev.stopReason)
	}
	if cs.promptIDs != nil {
		choice.TokenIDs = nonNilIDs(takeIDs(cs.heldIDs, ev.index, ev.tokenIDs))
	}
	sc.choices[0] = choice
	sc.chunk = cs.base()
	sc.chunk.Choices = sc.choices[:]
	sc.chunk.Usage = u
	return &sc.chunk
}

func (cs *chatStreamer) usage(u openai.Usage, m *openai.PerRequestMetrics) any {
	ch := cs.base()
	ch.Choices = []openai.ChatChunkChoice{}
	ch.Usage = &u
	ch.Metrics = m
	return ch
}

// holdIDs keeps ids (copied: events are reused) of a choice whose event
// sent no chunk, for its next one.
func holdIDs(held map[int][]int32, choice int, ids []int32) map[int][]int32 {
	if len(ids) == 0 {
		return held
	}
	if held == nil {
		held = map[int][]int32{}
	}
	held[choice] = append(held[choice], ids...)
	return held
}

// takeIDs is a choice's held ids followed by ids, and forgets the held.
func takeIDs(held map[int][]int32, choice int, ids []int32) []int32 {
	h, ok := held[choice]
	if !ok {
		return ids
	}
	delete(held, choice)
	return append(h, ids...)
}

// nonNilIDs is ids, [] for none (a list of token ids that is there,
// where nil would be null).
func nonNilIDs(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
