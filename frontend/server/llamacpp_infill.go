package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/openai"
)

// infillBatch is llama.cpp's default n_batch, which its FIM layout sizes
// the prefix and suffix by; a context under twice that uses half of it,
// so that the project's files keep room.
const infillBatch = 2048

// infill serves llama-server's POST /infill: code completion between
// input_prefix and input_suffix with the model's fill-in-the-middle
// tokens, after the project's files in input_extra, answered as
// /completion answers. A model without FIM tokens is 501, as in
// llama.cpp.
func (s *Server) infill(c echo.Context) error {
	fim := s.fimTokens()
	if m := fim.Missing(); m != "" {
		e := openai.BadRequest("", "Infill is not supported by this model: %s token missing", m)
		e.Status, e.Type = http.StatusNotImplemented, "not_supported_error"
		return writeError(c, e)
	}
	var req llamacpp.CompletionRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	switch {
	case len(req.Prompt) > 1 || (len(req.Prompt) == 1 && (len(req.Prompt[0]) != 1 || !req.Prompt[0][0].IsText)):
		return writeError(c, openai.BadRequest("prompt", `"prompt" must be a string`))
	case req.InputPrefix == nil:
		return writeError(c, openai.BadRequest("input_prefix", `"input_prefix" is required`))
	case req.InputSuffix == nil:
		return writeError(c, openai.BadRequest("input_suffix", `"input_suffix" is required`))
	}
	in := llamacpp.InfillInput{
		Prefix: s.tok.Encode(*req.InputPrefix, false), Suffix: s.tok.Encode(*req.InputSuffix, false),
		Repo: s.tok.Encode("myproject\n", false), CurrentFile: s.tok.Encode("filename\n", false),
		ChunkSeparator: s.tok.Encode("\n\n--- snippet ---\n\n", false), BOS: llamacpp.NoToken,
		NBatch: min(infillBatch, s.cfg.MaxModelLen/2), NCtx: s.cfg.MaxModelLen, NPredict: -1,
	}
	if len(req.Prompt) == 1 {
		in.Prompt = s.tok.Encode(req.Prompt[0][0].Text, false)
	}
	for _, ch := range req.InputExtra {
		if ch.Text == nil {
			return writeError(c, openai.BadRequest("input_extra", `extra_context chunk must contain a "text" field with a string value`))
		}
		name := "tmp"
		if ch.Filename != nil {
			name = *ch.Filename
		}
		in.Extra = append(in.Extra, llamacpp.ExtraChunk{File: s.tok.Encode(name+"\n", false), Text: s.tok.Encode(*ch.Text, false)})
	}
	if id, ok := s.tok.BOS(); ok && len(s.tok.Encode("", true)) > 0 { // the model adds a BOS
		in.BOS = id
	}
	if req.NPredict != nil {
		in.NPredict = *req.NPredict
	}
	req.Prompt = llamacpp.Prompts{{}}
	return s.runNative(c, &req, [][]int32{llamacpp.Infill(in, fim)})
}

// fimTokens finds the model's fill-in-the-middle tokens by the names
// llama.cpp knows them by: a name that the tokenizer reads as one special
// token.
func (s *Server) fimTokens() llamacpp.FIM {
	find := func(names []string) int32 {
		for _, n := range names {
			if ids := s.tok.Encode(n, false); len(ids) == 1 && s.tok.IsSpecial(ids[0]) {
				return ids[0]
			}
		}
		return llamacpp.NoToken
	}
	f := llamacpp.FIMNames
	return llamacpp.FIM{Pre: find(f.Pre), Suf: find(f.Suf), Mid: find(f.Mid), Rep: find(f.Rep), Sep: find(f.Sep)}
}
