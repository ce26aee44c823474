package server

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// messageRenderer is a chat template that renders whole messages (tool
// calls, names, content parts …); *chattemplate.Template is one. Other
// templates (ChatML) get role and text only.
type messageRenderer interface {
	RenderMessages(msgs []chattemplate.Object, addGenerationPrompt bool, kwargs map[string]any) (string, error)
}

// renderChat renders a chat request's messages with the model's chat
// template: add_generation_prompt, continue_final_message,
// chat_template_kwargs and tools apply.
func (s *Server) renderChat(req *openai.ChatCompletionRequest) (string, *openai.Error) {
	if n := len(req.Messages); s.cfg.PrefillAssistant && n > 0 && req.Messages[n-1].Role == "assistant" &&
		!req.ContinueFinalMessage && req.AddGenerationPrompt == nil {
		r := *req // llama-server's prefill: continue the final assistant message
		r.ContinueFinalMessage = true
		req = &r
	}
	kwargs := s.templateKwargs(req.ChatTemplateKwargs, req.ReasoningEffort)
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		if kwargs == nil {
			kwargs = map[string]any{}
		}
		if _, ok := kwargs["tools"]; !ok {
			kwargs["tools"] = req.Tools
		}
	}
	plain := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		plain[i] = tokenizer.Message{Role: m.Role, Content: m.Content.Text}
	}
	var text string
	var err error
	tmpl := s.tok.ChatTemplate()
	if r, ok := tmpl.(messageRenderer); ok {
		var objs []chattemplate.Object
		if objs, err = messageObjects(req.Messages); err == nil {
			if f := s.cfg.ReasoningParser; f != nil && f.Harmony {
				for i := range objs {
					objs[i] = harmonyThinking(objs[i])
				}
			}
			text, err = r.RenderMessages(objs, req.AddGenPrompt(), kwargs)
		}
	} else {
		text, err = tmpl.Render(plain, req.AddGenPrompt(), kwargs)
	}
	if err != nil {
		var re *chattemplate.RaiseError
		if errors.As(err, &re) {
			return "", openai.BadRequest("messages", "The chat template rejected the messages: %s", re.Message)
		}
		return "", openai.BadRequest("messages", "chat template: %v", err)
	}
	if req.ContinueFinalMessage {
		// The template closed the last message; continue it instead.
		text = trimFinalTurnEnd(text, plain)
	}
	return text, nil
}

// messageObjects turns the messages as sent into template objects, member
// order kept. Content sent as a list of text parts becomes one string (the
// "string" content format most templates expect, as vLLM's default).
func messageObjects(msgs []openai.ChatMessage) ([]chattemplate.Object, error) {
	out := make([]chattemplate.Object, len(msgs))
	for i, m := range msgs {
		if len(m.Raw) == 0 {
			out[i] = chattemplate.Object{{Key: "role", Value: m.Role}, {Key: "content", Value: m.Content.Text}}
			continue
		}
		v, err := chattemplate.ParseJSON(m.Raw)
		if err != nil {
			return nil, err
		}
		obj, ok := v.(chattemplate.Object)
		if !ok {
			return nil, errors.New("message is not an object")
		}
		if m.Content.Parts != nil {
			obj = slices.Clone(obj)
			for j := range obj {
				if obj[j].Key == "content" {
					obj[j].Value = m.Content.Text
				}
			}
		}
		out[i] = templateToolCalls(obj)
	}
	return out, nil
}

// templateToolCalls gives an assistant message's tool calls their
// arguments as objects, as vLLM passes them to chat templates
// (transformers' templates print them with tojson): the JSON text a
// client sends is parsed; arguments that are not an object's JSON, empty
// or missing become {}. An empty list of calls is dropped, so templates
// take the plain assistant path.
func templateToolCalls(msg chattemplate.Object) chattemplate.Object {
	if role, _ := msg.Get("role"); role != "assistant" {
		return msg
	}
	for i, m := range msg {
		if m.Key != "tool_calls" {
			continue
		}
		calls, ok := m.Value.([]any)
		if !ok {
			return msg
		}
		if len(calls) == 0 {
			return slices.Delete(slices.Clone(msg), i, i+1)
		}
		for _, c := range calls {
			call, _ := c.(chattemplate.Object)
			v, _ := call.Get("function")
			if fn, ok := v.(chattemplate.Object); ok {
				setArguments(call, fn)
			}
		}
		return msg
	}
	return msg
}

// setArguments makes fn's arguments an object (fn is call's "function").
func setArguments(call, fn chattemplate.Object) {
	for j, m := range fn {
		if m.Key == "arguments" {
			fn[j].Value = argumentsObject(m.Value)
			return
		}
	}
	for j, m := range call { // no arguments: {}
		if m.Key == "function" {
			call[j].Value = append(fn, chattemplate.Member{Key: "arguments", Value: chattemplate.Object{}})
		}
	}
}

func argumentsObject(v any) chattemplate.Object {
	switch a := v.(type) {
	case chattemplate.Object:
		return a
	case string:
		if parsed, err := chattemplate.ParseJSON([]byte(a)); err == nil {
			if obj, ok := parsed.(chattemplate.Object); ok {
				return obj
			}
		}
	}
	return chattemplate.Object{}
}

// trimFinalTurnEnd removes what the template appended after the last
// message's content, so generation continues that message.
func trimFinalTurnEnd(text string, msgs []tokenizer.Message) string {
	last := msgs[len(msgs)-1].Content
	for i := len(text) - len(last); i >= 0; i-- {
		if text[i:i+len(last)] == last {
			return text[:i+len(last)]
		}
	}
	return text
}

// templateKwargs is a request's chat_template_kwargs over its
// reasoning_effort (effort, rewritten by --reasoning-effort-map; nil:
// none) and the server's defaults (DefaultChatTemplateKwargs, then
// Reasoning's enable_thinking); the request's keys win. An effort is
// reasoning_effort and, unless the request sets it, enable_thinking (false
// for "none"), as vLLM renders them. The result is the caller's to change.
func (s *Server) templateKwargs(req map[string]any, effort *string) map[string]any {
	kwargs := maps.Clone(req)
	set := func(k string, v any) {
		if _, ok := kwargs[k]; ok {
			return
		}
		if kwargs == nil {
			kwargs = map[string]any{}
		}
		kwargs[k] = v
	}
	if effort != nil {
		e := *effort
		if m, ok := s.cfg.ReasoningEffortMap[e]; ok {
			e = m
		}
		set("reasoning_effort", e)
		set("enable_thinking", e != "none")
	}
	for k, v := range s.cfg.DefaultChatTemplateKwargs {
		set(k, v)
	}
	switch s.cfg.Reasoning {
	case "on":
		set("enable_thinking", true)
	case "off":
		set("enable_thinking", false)
	default: // auto: think when the template can, as llama-server does
		if s.templateReads("enable_thinking") {
			set("enable_thinking", true)
		}
	}
	return kwargs
}

// templateReads reports whether the chat template's source names v.
func (s *Server) templateReads(v string) bool {
	src, ok := s.tok.ChatTemplate().(interface{ Source() string })
	return ok && strings.Contains(src.Source(), v)
}

// harmonyThinking gives an assistant message the reasoning a client sent
// back (reasoning_content, or vLLM's reasoning) as thinking, the field
// gpt-oss's chat template writes into the analysis channel, so that a
// tool loop keeps the reasoning that led to its calls. A message that
// has thinking keeps it; one with both content and tool calls gets none,
// which the template refuses.
func harmonyThinking(msg chattemplate.Object) chattemplate.Object {
	if role, _ := msg.Get("role"); role != "assistant" {
		return msg
	}
	if _, ok := msg.Get("thinking"); ok {
		return msg
	}
	var text string
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if v, _ := msg.Get(key); v != nil {
			if s, ok := v.(string); ok && s != "" {
				text = s
				break
			}
		}
	}
	if text == "" {
		return msg
	}
	calls, _ := msg.Get("tool_calls")
	content, _ := msg.Get("content")
	if c, ok := content.(string); ok && c != "" && calls != nil {
		return msg
	}
	return append(slices.Clone(msg), chattemplate.Member{Key: "thinking", Value: text})
}
