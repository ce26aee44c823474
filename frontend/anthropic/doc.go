// Package anthropic translates Anthropic's Messages API (POST /v1/messages
// and /v1/messages/count_tokens, as vLLM and llama-server serve it) to and
// from the chat-completions pipeline the server already has: a decoded and
// checked request becomes an OpenAI chat request body (ChatBody), and what
// the generation writes (text, tool calls, how it ended, token counts)
// becomes a Messages response (Builder, NewResponse) or Anthropic's SSE
// events (Stream). Errors take Anthropic's shape (NewError).
//
// It is pure: no HTTP, no engine, no randomness (callers pass tool ids);
// it imports nothing from this repository, so frontend/server does the
// tokenizing, templating and generating, and this package only the shapes.
//
//	req, err := anthropic.DecodeMessages(body) // a *FieldError: a 400 naming the field
//	chat, err := req.ChatBody()                // an OpenAI chat request, as JSON
//	var st anthropic.Stream                    // or a Builder, for the whole message
//	st.Start(anthropic.NewResponse(id, model, anthropic.UsageOf(numPrompt, numCached, 0)))
//	st.Text("Checking.")
//	st.ToolUse("toolu_1", "get_weather")
//	st.InputJSON(`{"city":"Paris"}`)
//	st.Finish(anthropic.StopToolUse, nil, usage)
//	for _, ev := range st.Take() { /* event: ev.Name, data: JSON of ev.Data */ }
//
// The mapping, field by field, is in docs/api.md ("Anthropic Messages API").
package anthropic
