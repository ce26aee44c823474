package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/openai"
)

// mountLlamaCpp adds llama-server's own routes: its native completion,
// /infill, /embedding, /apply-template, /props, and the OpenAI routes without /v1 that
// llama-server also serves (/chat/completions, /models, /responses,
// /v1/health). See docs/api.md, "llama.cpp's native API".
func (s *Server) mountLlamaCpp(e *echo.Echo) {
	e.POST("/completion", s.nativeCompletion)
	e.POST("/completions", s.nativeCompletion)
	e.POST("/infill", s.infill)
	e.POST("/embedding", s.llamaEmbeddings)
	e.POST("/embeddings", s.llamaEmbeddings)
	e.POST("/apply-template", s.waking(s.applyTemplate))
	e.GET("/props", s.props)
	e.GET("/cors-proxy", s.corsProxy)
	e.POST("/cors-proxy", s.corsProxy)
	e.GET("/slots", s.slots)
	e.POST("/slots/:id_slot", s.slotAction)
	e.GET("/v1/health", s.health)
	e.GET("/models", s.models)
	e.POST("/chat/completions", s.chat)
	e.POST("/responses", s.createResponse)
	e.POST("/chat/completions/input_tokens", s.waking(s.chatInputTokens))
	e.POST("/v1/chat/completions/input_tokens", s.waking(s.chatInputTokens))
	s.mountStreams(e)
}

// chatInputTokens serves POST /v1/chat/completions/input_tokens (and
// without /v1): the prompt tokens a chat request would run, counted
// without running it: {"input_tokens": N}.
func (s *Server) chatInputTokens(c echo.Context) error {
	req, text, e := s.renderChatBody(c)
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, map[string]int{"input_tokens": len(s.tok.Encode(text, req.AddSpecial(false)))})
}

// applyTemplate serves POST /apply-template: the chat request's messages
// rendered by the chat template, as the prompt a chat completion would
// run, without running it.
func (s *Server) applyTemplate(c echo.Context) error {
	_, text, e := s.renderChatBody(c)
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, map[string]string{"prompt": text})
}

// renderChatBody reads a chat request and renders its messages.
func (s *Server) renderChatBody(c echo.Context) (*openai.ChatCompletionRequest, string, *openai.Error) {
	var req openai.ChatCompletionRequest
	if e := readBody(c, &req); e != nil {
		return nil, "", e
	}
	if len(req.Messages) == 0 {
		return nil, "", openai.BadRequest("messages", "'messages' is required.")
	}
	text, e := s.renderChat(&req)
	return &req, text, e
}

// slotBody is one entry of GET /slots.
type slotBody struct {
	ID           int  `json:"id"`
	IDTask       int  `json:"id_task"`
	NCtx         int  `json:"n_ctx"`
	Speculative  bool `json:"speculative"`
	IsProcessing bool `json:"is_processing"`
	Engine       int  `json:"engine"` // Tandem's: the engine core the slot is on
}

// slots serves GET /slots: llama-server's slots are the sequences each
// engine core runs at once (its --max-num-seqs), numbered across the
// engines; a slot is processing while that many of the engine's
// requests run (its latest report, or this frontend's unfinished
// requests on it when those are more). ?fail_on_no_slot=1 answers 503
// when every slot is busy. --no-slots: 501, as llama-server.
func (s *Server) slots(c echo.Context) error {
	if s.cfg.DisableSlots {
		e := openai.BadRequest("", "This server does not support slots endpoint.")
		e.Status, e.Type = http.StatusNotImplemented, "not_supported_error"
		return writeError(c, e)
	}
	out := []slotBody{}
	free := 0
	for _, e := range s.eng.Engines() {
		if !e.Ready {
			continue
		}
		busy := min(max(e.NumRunning, e.NumInFlight), e.Info.MaxNumSeqs)
		for i := range e.Info.MaxNumSeqs {
			out = append(out, slotBody{ID: len(out), IDTask: -1, NCtx: s.cfg.MaxModelLen, IsProcessing: i < busy, Engine: e.Index})
		}
		free += e.Info.MaxNumSeqs - busy
	}
	if c.QueryParam("fail_on_no_slot") == "1" && free == 0 {
		e := openai.ServiceUnavailable("no slot available")
		e.Type = "unavailable_error"
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, out)
}

// propsBody is GET /props: llama-server's server properties.
type propsBody struct {
	DefaultGenerationSettings defaultSettings `json:"default_generation_settings"`
	TotalSlots                int             `json:"total_slots"`
	ModelPath                 string          `json:"model_path"`
	ChatTemplate              string          `json:"chat_template"`
	ChatTemplateCaps          map[string]bool `json:"chat_template_caps"`
	Modalities                map[string]bool `json:"modalities"`
	BuildInfo                 string          `json:"build_info"`
	IsSleeping                bool            `json:"is_sleeping"`
	CORSProxyEnabled          bool            `json:"cors_proxy_enabled"`
	EOSToken                  string          `json:"eos_token"`
	BOSToken                  string          `json:"bos_token"`
}

type defaultSettings struct {
	ID           int                         `json:"id"`
	IDTask       int                         `json:"id_task"`
	NCtx         int                         `json:"n_ctx"`
	Speculative  bool                        `json:"speculative"`
	IsProcessing bool                        `json:"is_processing"`
	Params       llamacpp.GenerationSettings `json:"params"`
	Prompt       string                      `json:"prompt"`
}

// props serves GET /props: the defaults a /completion runs with, the
// sequences all engines run at once (total_slots, their --max-num-seqs
// summed), the model file, its chat template and Tandem's version.
// specDefaults is what generation_settings report for speculative.*
// when a request sets none: the first ready engine's speculative
// decoding (its READY), else llama-server's defaults.
func (s *Server) specDefaults() llamacpp.SpecDefaults {
	for _, e := range s.eng.Engines() {
		if sp := e.Info.Speculative; e.Ready && sp != nil {
			return llamacpp.SpecDefaults{Types: sp.Type, NMax: sp.NMax, NMin: sp.NMin, PMin: sp.PMin}
		}
	}
	return llamacpp.DefaultSpec
}

func (s *Server) props(c echo.Context) error {
	var none llamacpp.CompletionRequest
	set, _ := none.Resolve() // no prompt: only the defaults are wanted
	if s.cfg.DefaultSeed != nil {
		set.Seed = *s.cfg.DefaultSeed
	}
	busy, slots := false, 0
	for _, e := range s.eng.Engines() {
		if e.Ready {
			slots += e.Info.MaxNumSeqs
			busy = busy || e.NumRunning > 0
		}
	}
	tmpl := ""
	if t, ok := s.tok.ChatTemplate().(interface{ Source() string }); ok {
		tmpl = t.Source()
	}
	body := propsBody{
		DefaultGenerationSettings: defaultSettings{IDTask: -1, NCtx: s.cfg.MaxModelLen, IsProcessing: busy,
			Params: set.Generation(s.cfg.MaxModelLen, s.cfg.ServedModelName, nil, s.specDefaults())},
		TotalSlots: slots, ModelPath: s.cfg.ModelRoot, ChatTemplate: tmpl, ChatTemplateCaps: map[string]bool{},
		IsSleeping: s.sleeping(c.Request().Context()), CORSProxyEnabled: s.cfg.CORSProxy,
		Modalities: map[string]bool{"vision": false, "audio": false}, BuildInfo: "tandem-" + s.cfg.Version,
	}
	if ids := s.tok.EOS(); len(ids) > 0 {
		body.EOSToken, _ = tokenText(s.tok, ids[0])
	}
	if id, ok := s.tok.BOS(); ok {
		body.BOSToken, _ = tokenText(s.tok, id)
	}
	return c.JSON(http.StatusOK, body)
}
