package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/frontend/server"
)

// vertexFromEnv reads Vertex AI's custom-container variables: with
// AIP_MODE=PREDICTION the frontend serves the prediction protocol on
// AIP_PREDICT_ROUTE (default /predict), /health also on AIP_HEALTH_ROUTE,
// and listens on AIP_HTTP_PORT (default 8080) whatever --port says, as
// Vertex AI and llama-server expect. ok is false outside Vertex AI.
func vertexFromEnv(getenv func(string) string) (v server.Vertex, port int, ok bool, err error) {
	if getenv("AIP_MODE") != "PREDICTION" {
		return server.Vertex{}, 0, false, nil
	}
	route := func(name, def string) string {
		r := getenv(name)
		if r == "" {
			return def
		}
		if !strings.HasPrefix(r, "/") {
			r = "/" + r
		}
		return r
	}
	v = server.Vertex{PredictRoute: route("AIP_PREDICT_ROUTE", "/predict"), HealthRoute: route("AIP_HEALTH_ROUTE", "")}
	port = 8080
	if p := getenv("AIP_HTTP_PORT"); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return server.Vertex{}, 0, false, fmt.Errorf("AIP_HTTP_PORT %q: want a port number", p)
		}
	}
	return v, port, true, nil
}
