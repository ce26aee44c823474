package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// Vertex AI's prediction protocol for custom containers
// (https://cloud.google.com/vertex-ai/docs/predictions/custom-container-requirements),
// as llama-server serves it with AIP_MODE=PREDICTION: POST {"instances":
// [...]} to the predict route, each instance a request body naming the
// route it is for in "@requestFormat" (a path, or its camelCase alias:
// "chatCompletions" for /v1/chat/completions), answered
// {"predictions": [...]} in order, each the route's JSON answer or an
// {"error": …} of its own.

// Vertex is the prediction protocol's routes (Config.Vertex); a zero
// PredictRoute serves none.
type Vertex struct {
	PredictRoute string // AIP_PREDICT_ROUTE, default /predict
	HealthRoute  string // AIP_HEALTH_ROUTE; "" = only /health
}

// maxInstances bounds one prediction request, as llama-server does.
const maxInstances = 128

// mountVertex adds the predict (and health) route once every other route
// is mounted: the aliases are of the POST routes there are.
func (s *Server) mountVertex(e *echo.Echo) {
	v := s.cfg.Vertex
	if v.PredictRoute == "" {
		return
	}
	aliases := map[string]string{}
	for _, r := range e.Routes() {
		if r.Method != http.MethodPost || strings.Contains(r.Path, ":") || strings.Contains(r.Path, "*") {
			continue
		}
		if a := vertexAlias(r.Path); a != "" {
			if _, taken := aliases[a]; !taken || strings.HasPrefix(r.Path, "/v1/") {
				aliases[a] = r.Path
			}
		}
	}
	if v.HealthRoute != "" && v.HealthRoute != "/health" {
		e.GET(v.HealthRoute, s.health)
	}
	e.POST(v.PredictRoute, func(c echo.Context) error { return s.predict(c, aliases) })
}

// vertexAlias is a route's camelCase name: /v1/chat/completions →
// chatCompletions, /apply-template → applyTemplate.
func vertexAlias(path string) string {
	p := strings.TrimPrefix(strings.TrimPrefix(path, "/v1"), "/")
	var b strings.Builder
	upper := false
	for _, r := range p {
		switch {
		case r == '/' || r == '-' || r == '_':
			upper = true
		case upper:
			b.WriteRune(unicode.ToUpper(r))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// predict serves the predict route: each instance through the route it
// names, concurrently, through the whole handler (authentication,
// limits and metrics as for a direct request), never streamed.
func (s *Server) predict(c echo.Context, aliases map[string]string) error {
	body, e := requestBody(c)
	if e != nil {
		return writeError(c, e)
	}
	var req struct {
		Instances []json.RawMessage `json:"instances"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Instances == nil {
		return writeError(c, openai.BadRequest("instances", "The request body must be a JSON object with an array field named instances."))
	}
	if len(req.Instances) > maxInstances {
		return writeError(c, openai.BadRequest("instances", "instances has %d entries; at most %d are served at once.", len(req.Instances), maxInstances))
	}
	out := make([]json.RawMessage, len(req.Instances))
	var wg sync.WaitGroup
	for i, inst := range req.Instances {
		wg.Go(func() { out[i] = s.predictOne(c.Request(), inst, aliases) })
	}
	wg.Wait()
	return c.JSON(http.StatusOK, map[string][]json.RawMessage{"predictions": out})
}

// predictOne answers one instance: the route's JSON answer, or an error
// object.
func (s *Server) predictOne(outer *http.Request, inst json.RawMessage, aliases map[string]string) json.RawMessage {
	fail := func(e *openai.Error) json.RawMessage { return e.JSON() }
	var fields map[string]json.RawMessage
	if json.Unmarshal(inst, &fields) != nil || fields == nil {
		return fail(openai.BadRequest("instances", "Each instance must be a JSON object."))
	}
	var format string
	if json.Unmarshal(fields["@requestFormat"], &format) != nil || format == "" {
		return fail(openai.BadRequest("@requestFormat", "Each instance must include a string @requestFormat."))
	}
	path, ok := aliases[format]
	if !ok {
		for _, p := range aliases {
			if p == format {
				path, ok = p, true
			}
		}
	}
	if !ok || path == s.cfg.Vertex.PredictRoute {
		return fail(openai.BadRequest("@requestFormat", "No route for @requestFormat %q.", format))
	}
	delete(fields, "@requestFormat")
	if _, set := fields["stream"]; set {
		fields["stream"] = json.RawMessage("false") // the protocol has no streams
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return fail(openai.Internal("encoding the instance: %v", err))
	}
	r := httptest.NewRequestWithContext(outer.Context(), http.MethodPost, path, bytes.NewReader(b))
	for _, h := range []string{echo.HeaderAuthorization, "X-Api-Key", "X-Session-ID", echo.HeaderContentType} {
		if v := outer.Header.Get(h); v != "" {
			r.Header.Set(h, v)
		}
	}
	r.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	r.RemoteAddr = outer.RemoteAddr
	rec := httptest.NewRecorder()
	s.e.ServeHTTP(rec, r)
	ans := bytes.TrimSpace(rec.Body.Bytes())
	if len(ans) == 0 {
		return json.RawMessage("null")
	}
	if !json.Valid(ans) {
		text, _ := json.Marshal(string(ans))
		return text
	}
	return ans
}
