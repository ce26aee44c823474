package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// checkModel answers 404 for a model other than the served one ("" is
// the served one).
func (s *Server) checkModel(model string) *openai.Error {
	if model != "" && model != s.cfg.ServedModelName {
		return openai.ModelNotFound(model)
	}
	return nil
}

// tokenize serves POST /tokenize (vLLM's shape): a prompt, or chat
// messages rendered with the chat template, to token ids.
func (s *Server) tokenize(c echo.Context) error {
	var req openai.TokenizeRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := req.Validate(); e != nil {
		return writeError(c, e)
	}
	if e := s.checkModel(req.Model); e != nil {
		return writeError(c, e)
	}
	var ids []int32
	if req.Prompt != nil {
		ids = s.tok.Encode(*req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
	} else {
		chat := req.ChatRequest()
		text, e := s.renderChat(chat)
		if e != nil {
			return writeError(c, e)
		}
		ids = s.tok.Encode(text, chat.AddSpecial(false))
	}
	out := openai.TokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids}
	if out.Tokens == nil {
		out.Tokens = []int32{}
	}
	if req.ReturnTokenStrs {
		out.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			out.TokenStrs[i], _ = tokenText(s.tok, id)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// detokenize serves POST /detokenize: token ids to text, special tokens
// included.
func (s *Server) detokenize(c echo.Context) error {
	var req openai.DetokenizeRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := s.checkModel(req.Model); e != nil {
		return writeError(c, e)
	}
	if req.Tokens == nil {
		return writeError(c, openai.BadRequest("tokens", "'tokens' is required."))
	}
	if e := s.checkTokens("tokens", req.Tokens); e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, openai.DetokenizeResponse{Prompt: s.tok.Decode(req.Tokens, false)})
}
