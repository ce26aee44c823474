package main

import (
	"testing"

	"github.com/tandem-llm/tandem/frontend/server"
)

func TestVertexFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    server.Vertex
		port    int
		ok, err bool
	}{
		{name: "not on Vertex AI", env: map[string]string{}},
		{name: "defaults", env: map[string]string{"AIP_MODE": "PREDICTION"}, want: server.Vertex{PredictRoute: "/predict"}, port: 8080, ok: true},
		{name: "routes and port", env: map[string]string{"AIP_MODE": "PREDICTION", "AIP_PREDICT_ROUTE": "v1/predict", "AIP_HEALTH_ROUTE": "/hc", "AIP_HTTP_PORT": "7080"},
			want: server.Vertex{PredictRoute: "/v1/predict", HealthRoute: "/hc"}, port: 7080, ok: true},
		{name: "bad port", env: map[string]string{"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": "http"}, err: true},
	} {
		v, port, ok, err := vertexFromEnv(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.err || ok != tc.ok || v != tc.want || port != tc.port {
			t.Errorf("%s: %+v %d %v %v", tc.name, v, port, ok, err)
		}
	}
}
