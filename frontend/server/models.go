package server

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// card is the served model's card, vLLM's ModelCard: root is the model
// the engines loaded, parent null (no adapters), one default permission.
func (s *Server) card() openai.Model {
	m := openai.Model{ID: s.cfg.ServedModelName, Object: openai.ObjectModel, Created: s.created, OwnedBy: openai.OwnedBy,
		MaxModelLen: s.cfg.MaxModelLen, Permission: []openai.ModelPermission{openai.DefaultPermission(s.permissionID, s.created)}}
	if len(s.cfg.ModelAliases) > 0 || len(s.cfg.ModelTags) > 0 { // llama-server's fields
		m.Aliases = append([]string{s.cfg.ServedModelName}, slices.DeleteFunc(slices.Clone(s.cfg.ModelAliases), func(a string) bool { return a == s.cfg.ServedModelName })...)
		m.Tags = s.cfg.ModelTags
	}
	if s.cfg.ModelRoot != "" {
		root := s.cfg.ModelRoot
		m.Root = &root
	}
	return m
}

// models serves GET /v1/models.
func (s *Server) models(c echo.Context) error {
	return c.JSON(http.StatusOK, openai.ModelList{Object: openai.ObjectList, Data: append([]openai.Model{s.card()}, s.loraCards()...)})
}

// model serves GET /v1/models/{id} (OpenAI's retrieve): the card, or
// 404 model_not_found for a model this server does not serve. The id may
// hold slashes ("org/name"), as sent or escaped.
func (s *Server) model(c echo.Context) error {
	id := c.Param("*")
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	if !s.isModelName(id) {
		for _, m := range s.loraCards() {
			if m.ID == id {
				return c.JSON(http.StatusOK, m)
			}
		}
		return writeError(c, openai.ModelNotFound(id))
	}
	return c.JSON(http.StatusOK, s.card())
}
