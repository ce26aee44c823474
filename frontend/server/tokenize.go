package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// checkModel answers 404 for a model this server does not answer to:
// "" and the served name, its aliases, or any name with AcceptAnyModel.
func (s *Server) checkModel(model string) *openai.Error {
	if model == "" || s.cfg.AcceptAnyModel || s.isModelName(model) {
		return nil
	}
	if _, ok := s.loras.module(model); ok {
		return nil
	}
	return openai.ModelNotFound(model)
}

// isModelName reports whether name is the served name or an alias.
func (s *Server) isModelName(name string) bool {
	return name == s.cfg.ServedModelName || slices.Contains(s.cfg.ModelAliases, name)
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
	if req.Content != nil {
		ids = s.tok.Encode(*req.Content, req.AddSpecial != nil && *req.AddSpecial)
	} else if req.Prompt != nil {
		ids = s.tok.Encode(*req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
	} else {
		chat := req.ChatRequest()
		text, e := s.renderChat(chat)
		if e != nil {
			return writeError(c, e)
		}
		ids = s.tok.Encode(text, chat.AddSpecial(false))
	}
	if req.WithPieces {
		pieces := make([]openai.TokenPiece, len(ids))
		for i, id := range ids {
			text, nums := tokenText(s.tok, id)
			pieces[i] = openai.TokenPiece{ID: id, Piece: text}
			if !utf8.ValidString(text) {
				pieces[i].Piece = nums
			}
		}
		return c.JSON(http.StatusOK, openai.TokenizePiecesResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: pieces})
	}
	out := openai.TokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids}
	if out.Tokens == nil {
		out.Tokens = []int32{}
	}
	if req.ReturnTokenStrs {
		out.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			out.TokenStrs[i] = s.tokenString(id)
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
	out := openai.DetokenizeResponse{Prompt: s.tok.Decode(req.Tokens, false)}
	if req.Model == "" {
		out.Content = &out.Prompt
	}
	return c.JSON(http.StatusOK, out)
}

// vocabTexter is a tokenizer that keeps its vocabulary's token strings
// (tokenizer.BPE: "Ġhello", "▁world", "<0x0A>").
type vocabTexter interface {
	TokenText(id int32) (string, bool)
}

// tokenString is id's token string as the tokenizer's vocabulary writes
// it, what vLLM's convert_ids_to_tokens gives for token_strs; a
// tokenizer without one (the byte tokenizer) gives the token's bytes.
func (s *Server) tokenString(id int32) string {
	if v, ok := s.tok.(vocabTexter); ok {
		if t, ok := v.TokenText(id); ok {
			return t
		}
	}
	t, _ := tokenText(s.tok, id)
	return t
}

// tokenizerInfo serves GET /tokenizer_info (with
// --enable-tokenizer-info-endpoint, as in vLLM): the tokenizer's
// configuration in tokenizer_config.json's terms, with its class and chat
// template.
func (s *Server) tokenizerInfo(c echo.Context) error {
	class := strings.TrimPrefix(fmt.Sprintf("%T", s.tok), "*") // vLLM gives the Python class; this is the Go type
	info := map[string]any{
		"tokenizer_class":  class[strings.LastIndex(class, ".")+1:],
		"model_max_length": s.cfg.MaxModelLen,
		"vocab_size":       s.tok.VocabSize(),
	}
	if t, ok := s.tok.(interface{ BOSText() string }); ok {
		if bos := t.BOSText(); bos != "" {
			info["bos_token"] = bos
		}
	}
	if t, ok := s.tok.(interface{ EOSText() string }); ok {
		if eos := t.EOSText(); eos != "" {
			info["eos_token"] = eos
		}
	}
	if t, ok := s.tok.(interface{ AddBOS() bool }); ok {
		info["add_bos_token"] = t.AddBOS()
	}
	if src := chatTemplateSource(s.tok); src != "" {
		info["chat_template"] = src
	}
	return c.JSON(http.StatusOK, info)
}

// chatTemplateSource is the Jinja source of the chat template in use:
// --chat-template's, else the model's ("" for none).
func chatTemplateSource(tok tokenizer.Tokenizer) string {
	if t, ok := tok.ChatTemplate().(interface{ Source() string }); ok {
		return t.Source()
	}
	if t, ok := tok.(interface{ ChatTemplateSource() string }); ok {
		return t.ChatTemplateSource()
	}
	return ""
}
