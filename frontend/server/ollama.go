package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/ollama"
	"github.com/tandem-llm/tandem/frontend/openai"
)

// Ollama's native API on the chat pipeline: package ollama turns a body
// into a chat request, which is rendered, tokenized and generated as a
// one-choice chat completion (tools read out by the server's tool-call
// parser, sessions as in chat), and the answer back into Ollama's
// objects, streamed as NDJSON unless "stream": false. Errors on /api/
// routes are Ollama's {"error": "…"} (writeError). See docs/api.md.

// mountOllama adds Ollama's routes.
func (s *Server) mountOllama(e *echo.Echo) {
	e.POST("/api/chat", s.ollamaChat)
	e.POST("/api/generate", s.ollamaGenerate)
	e.GET("/api/tags", s.ollamaTags)
	e.POST("/api/show", s.ollamaShow)
	e.GET("/api/ps", s.ollamaPS)
	e.GET("/api/version", s.ollamaVersion)
	e.POST("/api/embed", s.ollamaEmbed)
	e.POST("/api/embeddings", s.ollamaLegacyEmbeddings)
	for _, p := range []string{"/api/pull", "/api/push", "/api/create", "/api/copy"} {
		e.POST(p, ollamaUnsupported("model management is not served: Tandem serves the model it was started with (see /api/tags)"))
	}
	e.DELETE("/api/delete", ollamaUnsupported("model management is not served: Tandem serves the model it was started with (see /api/tags)"))
}

// ollamaUnsupported answers one of Ollama's routes Tandem does not serve
// with a 404 that says why, so that a client shows the reason rather than
// a bare "Not Found" (a 404, not a 501: the route is not there, and a 5xx
// would say the server failed).
func ollamaUnsupported(why string) echo.HandlerFunc {
	return func(c echo.Context) error {
		return writeError(c, openai.NotFound("", "%s", why))
	}
}

// isOllamaPath reports whether a path is Ollama's API, whose errors are
// Ollama's.
func isOllamaPath(p string) bool { return strings.HasPrefix(p, "/api/") }

// ollamaName is the served model's name as Ollama lists it: with a tag.
func (s *Server) ollamaName() string {
	if strings.Contains(s.cfg.ServedModelName, ":") {
		return s.cfg.ServedModelName
	}
	return s.cfg.ServedModelName + ":latest"
}

// checkOllamaModel accepts the served name or an alias, with or without
// Ollama's default tag, as Ollama resolves "name" to "name:latest".
func (s *Server) checkOllamaModel(name string) *openai.Error {
	if name == "" {
		return openai.BadRequest("model", "model is required")
	}
	if s.cfg.AcceptAnyModel || s.isModelName(name) || s.isModelName(strings.TrimSuffix(name, ":latest")) || s.ollamaModule(name) != "" {
		return nil
	}
	e := openai.ModelNotFound(name)
	e.Message = "model '" + name + "' not found"
	return e
}

// ollamaModule is the LoRA module an Ollama model name names (with or
// without ":latest"), "" for none: the request then applies it.
func (s *Server) ollamaModule(name string) string {
	for _, n := range []string{name, strings.TrimSuffix(name, ":latest")} {
		if _, ok := s.loras.module(n); ok {
			return n
		}
	}
	return ""
}

// ollamaChat serves POST /api/chat.
func (s *Server) ollamaChat(c echo.Context) error {
	start := time.Now()
	var req ollama.ChatRequest
	if e := decodeOllama(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := s.checkOllamaModel(req.Model); e != nil {
		return writeError(c, e)
	}
	if len(req.Messages) == 0 { // Ollama's way to load a model
		return c.JSON(http.StatusOK, ollama.ChatResponse{Model: req.Model, CreatedAt: ollama.Timestamp(time.Now()),
			Message: ollama.Message{Role: "assistant"}, Done: true, DoneReason: ollama.DoneLoad})
	}
	body, err := req.ChatBody()
	if err != nil {
		return writeError(c, openai.BadRequest("", "%v", err))
	}
	return s.ollamaRun(c, ollamaRun{start: start, model: req.Model, body: body, stream: req.Streams()})
}

// ollamaGenerate serves POST /api/generate.
func (s *Server) ollamaGenerate(c echo.Context) error {
	start := time.Now()
	var req ollama.GenerateRequest
	if e := decodeOllama(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := s.checkOllamaModel(req.Model); e != nil {
		return writeError(c, e)
	}
	if req.Prompt == "" && len(req.Context) == 0 { // Ollama's way to load a model
		return c.JSON(http.StatusOK, ollama.GenerateResponse{Model: req.Model, CreatedAt: ollama.Timestamp(time.Now()),
			Done: true, DoneReason: ollama.DoneLoad})
	}
	if e := s.checkTokens("context", req.Context); e != nil {
		return writeError(c, e)
	}
	run := ollamaRun{start: start, model: req.Model, stream: req.Streams(), generate: true, context: req.Context}
	var err error
	if req.Raw {
		raw := req.Prompt
		run.raw = &raw
		req.System, req.Template = "", "" // raw: the prompt is the whole text, as Ollama reads it
	}
	if run.body, err = req.ChatBody(); err != nil {
		return writeError(c, openai.BadRequest("", "%v", err))
	}
	return s.ollamaRun(c, run)
}

// decodeOllama reads an Ollama request body into v.
func decodeOllama(c echo.Context, v any) *openai.Error {
	body, e := requestBody(c)
	if e != nil {
		return e
	}
	if err := ollama.Decode(body, v); err != nil {
		return openai.BadRequest("", "%v", err)
	}
	return nil
}

// ollamaRun is one /api/chat or /api/generate request, as a chat body.
type ollamaRun struct {
	start    time.Time
	model    string // as the request named it, as Ollama echoes it
	body     []byte // the OpenAI chat body
	stream   bool
	generate bool    // /api/generate: the answer is "response", with context
	raw      *string // generate's raw prompt, tokenized as is (no chat template)
	context  []int32 // generate's context: tokens before the prompt
	think    *thinker
}

// ollamaRun runs the request and writes its answer.
func (s *Server) ollamaRun(c echo.Context, run ollamaRun) error {
	var chat openai.ChatCompletionRequest
	if e := openai.Decode(run.body, &chat); e != nil {
		return writeError(c, e)
	}
	if e := chat.Validate(); e != nil {
		return writeError(c, e)
	}
	chat.Params.Model = s.ollamaModule(run.model) // a LoRA module's name applies it; the served model's none
	cm, e := s.resolveCommon(c, &chat.Params)
	if e != nil {
		return writeError(c, e)
	}
	var prompt []int32
	var text string
	if run.raw != nil {
		text = *run.raw
		prompt = append(slices.Clone(run.context), s.tok.Encode(text, len(run.context) == 0)...)
	} else {
		if text, e = s.renderChat(&chat); e != nil {
			return writeError(c, e)
		}
		prompt = append(slices.Clone(run.context), s.tok.Encode(text, false)...)
	}
	maxOut, set := chat.MaxOutputTokens()
	maxTokens, e := s.checkLength(len(prompt), maxOut, set)
	if e != nil {
		return writeError(c, e)
	}
	lp := chat.SampleLogprobs()
	if e := s.checkLogprobParams(&chat.Params, lp); e != nil {
		return writeError(c, e)
	}
	sp, e := samplingParams(&chat.Params, maxTokens, lp, s.tok.EOS())
	if e != nil {
		return writeError(c, e)
	}
	plan, e := chat.ToolPlanOf()
	if e != nil {
		return writeError(c, e)
	}
	call := &messageCall{plan: plan, auto: s.autoTools(plan), newID: func() string { return "" }}
	run.think = s.thinkerFor(text, &sp, thinkOptionsOf(&chat.Params, false))
	id := "ollama-" + cm.baseID
	g := cm.newGen(id, prompt, sp, &chat.Params, skipSpecialOf(nil, call.auto, run.think))
	if run.stream {
		return s.ollamaStream(c, g, call, run)
	}
	res, err := s.collect(c.Request().Context(), []*genRequest{g}, s.startAll, false)
	if err != nil {
		return respondCollected(c, nil, err)
	}
	r := res[0]
	var a ollamaAnswer
	thought, answer := run.think.split(r.text.String())
	call.write(&a, answer, r.finish)
	last := run.last(g, r.finish, r.numTokens, r.timing, r.tokenIDs)
	last.content, last.thinking = a.content.String(), thought
	last.calls = a.toolCalls()
	last.logprobs = ollamaLogprobs(r.logprobs)
	return c.JSON(http.StatusOK, last.value())
}

// ollamaStream streams the answer as NDJSON: an object per piece of
// text, the calls (read whole) in one object of their own, then the last
// object with done, done_reason and the stats.
func (s *Server) ollamaStream(c echo.Context, g *genRequest, call *messageCall, run ollamaRun) error {
	ctx := c.Request().Context()
	events, cancel, err := s.startAll(ctx, []*genRequest{g})
	if err != nil {
		return writeError(c, engineError(err))
	}
	defer cancel()
	w := ndjson{c: c}
	var a ollamaAnswer
	var ids []int32
	var lps []ollama.Logprob // the tokens' not yet sent, with logprobs
	split := run.think.splitter()
	for {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil // the client left; cancel aborts the request
		}
		if ev.err != nil {
			e := engineError(ev.err)
			if !w.started {
				return writeError(c, e)
			}
			_ = w.write(ollama.Error{Error: e.Message}) // Ollama's clients raise an error object mid-stream
			w.flush()
			return nil
		}
		ids = append(ids, ev.tokenIDs...)
		lps = append(lps, ollamaLogprobs(s.decodeLogprobs(ev.logprobs, false))...)
		text := ev.text
		if split != nil {
			var thought string
			thought, text = split.Next(text, ev.finish != "")
			a.thinking.WriteString(thought)
		}
		call.write(&a, text, ev.finish)
		if a.content.Len() > 0 || a.thinking.Len() > 0 {
			piece := ollamaPiece{run: &run, content: a.content.String(), thinking: a.thinking.String(), logprobs: lps}
			a.content.Reset()
			a.thinking.Reset()
			lps = nil
			if w.write(piece.value()) != nil {
				return nil
			}
		}
		if ev.finish != "" {
			if calls := a.toolCalls(); len(calls) > 0 {
				if w.write(ollamaPiece{run: &run, calls: calls, logprobs: lps}.value()) != nil {
					return nil
				}
				lps = nil
			}
			last := run.last(g, ev.finish, len(ids), ev.timing, ids)
			last.logprobs = lps
			_ = w.write(last.value())
			w.flush()
			return nil
		}
		if len(events) == 0 { // nothing more ready: send what is written
			w.flush()
		}
	}
}

// last is the answer's last object: done, with done_reason and stats.
func (run *ollamaRun) last(g *genRequest, finish string, numTokens int, t engineclient.Timing, ids []int32) ollamaPiece {
	st := &ollama.Stats{TotalDuration: time.Since(run.start).Nanoseconds(), PromptEvalCount: len(g.prompt), EvalCount: numTokens}
	if promptMS, predMS, ok := engineMS(t); ok {
		st.PromptEvalDuration, st.EvalDuration = int64(promptMS*1e6), int64(predMS*1e6)
	}
	p := ollamaPiece{run: run, done: true, reason: ollama.DoneReason(finish), stats: st}
	if run.generate {
		p.context = append(slices.Clone(g.prompt), ids...)
	}
	return p
}

// ollamaPiece is one object of an answer, for chat or generate.
type ollamaPiece struct {
	run      *ollamaRun
	content  string
	thinking string
	calls    []ollama.ToolCall
	done     bool
	reason   string
	stats    *ollama.Stats
	context  []int32
	logprobs []ollama.Logprob
}

func (p ollamaPiece) value() any {
	now := ollama.Timestamp(time.Now())
	if p.run.generate {
		return ollama.GenerateResponse{Model: p.run.model, CreatedAt: now, Response: p.content, Thinking: p.thinking, Done: p.done,
			DoneReason: p.reason, Context: p.context, Logprobs: p.logprobs, Stats: p.stats}
	}
	return ollama.ChatResponse{Model: p.run.model, CreatedAt: now, Done: p.done, DoneReason: p.reason, Stats: p.stats,
		Message: ollama.Message{Role: "assistant", Content: p.content, Thinking: p.thinking, ToolCalls: p.calls}, Logprobs: p.logprobs}
}

// ollamaLogprobs are decoded logprobs in Ollama's form.
func ollamaLogprobs(lps []tokenLogprob) []ollama.Logprob {
	var out []ollama.Logprob
	for _, l := range lps {
		o := ollama.Logprob{Token: l.token, Logprob: l.logprob, Bytes: l.bytes}
		for _, t := range l.top {
			o.TopLogprobs = append(o.TopLogprobs, ollama.TokenLogprob{Token: t.token, Logprob: t.logprob, Bytes: t.bytes})
		}
		out = append(out, o)
	}
	return out
}

// ollamaAnswer collects an answer's text and calls (an answerWriter).
type ollamaAnswer struct {
	content  strings.Builder // text not yet sent
	thinking strings.Builder // reasoning not yet sent
	calls    []ollamaCall
}

type ollamaCall struct {
	name string
	args strings.Builder
}

func (a *ollamaAnswer) Text(s string)            { a.content.WriteString(s) }
func (a *ollamaAnswer) ToolUse(_, name string)   { a.calls = append(a.calls, ollamaCall{name: name}) }
func (a *ollamaAnswer) InputJSON(partial string) { a.calls[len(a.calls)-1].args.WriteString(partial) }

// toolCalls are the calls read, with their arguments as objects.
func (a *ollamaAnswer) toolCalls() []ollama.ToolCall {
	var out []ollama.ToolCall
	for i := range a.calls {
		out = append(out, ollama.NewToolCall(i, a.calls[i].name, a.calls[i].args.String()))
	}
	return out
}

// ndjson writes an application/x-ndjson response, one JSON object per
// line.
type ndjson struct {
	c       echo.Context
	started bool
}

func (w *ndjson) write(v any) error {
	if !w.started {
		w.started = true
		w.c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
		w.c.Response().WriteHeader(http.StatusOK)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.c.Response().Write(append(b, '\n'))
	return err
}

func (w *ndjson) flush() { w.c.Response().Flush() }

// ollamaModelEntry describes the served model as far as the frontend knows
// it: the format by its file, the size when the file is on this host.
func (s *Server) ollamaModelEntry() ollama.ListModel {
	root := s.cfg.ModelRoot
	d := ollama.ModelDetails{Format: "gguf", Families: []string{}}
	var size int64
	modified := time.Unix(nowUnix(), 0)
	if fi, err := os.Stat(root); err == nil {
		if fi.IsDir() {
			d.Format = "safetensors"
			if files, _ := filepath.Glob(filepath.Join(root, "*.safetensors")); len(files) > 0 {
				for _, f := range files {
					if st, err := os.Stat(f); err == nil {
						size += st.Size()
					}
				}
			}
		} else {
			size = fi.Size()
		}
		modified = fi.ModTime()
	}
	name := s.ollamaName()
	return ollama.ListModel{Name: name, Model: name, ModifiedAt: ollama.Timestamp(modified), Size: size,
		Digest: strings.TrimPrefix(s.fingerprint, "fp_"), Details: d}
}

// ollamaTags serves GET /api/tags: the served model.
func (s *Server) ollamaTags(c echo.Context) error {
	models := []ollama.ListModel{s.ollamaModelEntry()}
	for _, card := range s.loraCards() { // LoRA modules: models of their own, as on /v1/models
		m := s.ollamaModelEntry()
		m.Name, m.Model = card.ID, card.ID
		models = append(models, m)
	}
	return c.JSON(http.StatusOK, ollama.ListResponse{Models: models})
}

// ollamaPS serves GET /api/ps: the served model, loaded while an engine
// is ready.
func (s *Server) ollamaPS(c echo.Context) error {
	out := ollama.ProcessResponse{Models: []ollama.RunningModel{}}
	if s.ready() && !s.sleeping(c.Request().Context()) {
		m := s.ollamaModelEntry()
		out.Models = append(out.Models, ollama.RunningModel{ListModel: m, ExpiresAt: ollama.Timestamp(time.Now().Add(24 * 365 * time.Hour)),
			ContextLength: s.cfg.MaxModelLen})
	}
	return c.JSON(http.StatusOK, out)
}

// ollamaShow serves POST /api/show: the chat template, the context
// length and what the model can do.
func (s *Server) ollamaShow(c echo.Context) error {
	var req ollama.ShowRequest
	if e := decodeOllama(c, &req); e != nil {
		return writeError(c, e)
	}
	if req.Model == "" {
		req.Model = req.Name
	}
	if e := s.checkOllamaModel(req.Model); e != nil {
		return writeError(c, e)
	}
	tmpl := ""
	if t, ok := s.tok.ChatTemplate().(interface{ Source() string }); ok {
		tmpl = t.Source()
	}
	caps := []string{"completion"}
	if s.cfg.ToolParser != nil {
		caps = append(caps, "tools")
	}
	m := s.ollamaModelEntry()
	return c.JSON(http.StatusOK, ollama.ShowResponse{Template: tmpl, Details: m.Details, Capabilities: caps, ModifiedAt: m.ModifiedAt,
		ModelInfo: map[string]any{"general.context_length": s.cfg.MaxModelLen, "tandem.served_model_name": s.cfg.ServedModelName}})
}

// ollamaVersion serves GET /api/version: Tandem's version.
func (s *Server) ollamaVersion(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"version": s.cfg.Version})
}
