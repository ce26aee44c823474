package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/model"
)

func TestParseRopeScaling(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		scale   float64
		orig    int
		want    *model.RopeScaling
		wantErr string
	}{
		{"", 0, 0, nil, ""},
		{"yarn", 4, 32768, &model.RopeScaling{Type: "yarn", Factor: 4, OrigContextLen: 32768}, ""},
		{"yarn", 4, 0, &model.RopeScaling{Type: "yarn", Factor: 4}, ""},
		{"linear", 2, 0, &model.RopeScaling{Type: "linear", Factor: 2}, ""},
		{"none", 0, 0, &model.RopeScaling{}, ""},
		{`{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}`, 0, 0,
			&model.RopeScaling{Type: "yarn", Factor: 4, OrigContextLen: 32768}, ""},
		{`{"type":"yarn","factor":8,"original_max_position_embeddings":4096,"beta_fast":16,"beta_slow":2}`, 0, 0,
			&model.RopeScaling{Type: "yarn", Factor: 8, OrigContextLen: 4096, BetaFast: 16, BetaSlow: 2}, ""},
		{"", 4, 0, nil, "need --rope-scaling"},
		{"yarn", 0, 0, nil, "needs a factor above 1"},
		{"dynamic", 2, 0, nil, "want none, linear or yarn"},
		{`{"rope_type":"yarn","factor":4,"mscale":0.7}`, 0, 0, nil, "unknown field"},
		{"linear", 2, 4096, nil, "with yarn"},
	} {
		got, err := parseRopeScaling(tc.spec, tc.scale, tc.orig)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q %g %d: %v, want an error saying %q", tc.spec, tc.scale, tc.orig, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("%q %g %d = %+v, %v; want %+v", tc.spec, tc.scale, tc.orig, got, err, tc.want)
		}
	}
}
