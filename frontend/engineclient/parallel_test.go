package engineclient

import (
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

func TestChildren(t *testing.T) {
	rank := 1
	seed := int64(40)
	tests := []struct {
		name      string
		n         int
		seed      *int64
		wantIDs   []string
		wantSeeds []int64 // nil: unseeded
	}{
		{"one sample is the request itself", 1, &seed, []string{"req"}, []int64{40}},
		{"n=0 means one", 0, nil, []string{"req"}, nil},
		{"three seeded", 3, &seed, []string{"0_req", "1_req", "2_req"}, []int64{40, 41, 42}},
		{"two unseeded", 2, nil, []string{"0_req", "1_req"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := &wire.EngineCoreRequest{RequestID: "req", PromptTokenIDs: []int32{1, 2}, SessionID: "s", CacheSalt: "salt",
				Priority: 3, DataParallelRank: &rank, ExternalReqID: "ext", SamplingParams: wire.DefaultSamplingParams()}
			parent.SamplingParams.N, parent.SamplingParams.Seed = tt.n, tt.seed
			kids := Children(parent)
			if len(kids) != len(tt.wantIDs) {
				t.Fatalf("%d children, want %d", len(kids), len(tt.wantIDs))
			}
			for i, k := range kids {
				if k.RequestID != tt.wantIDs[i] || k.SamplingParams.N != 1 || k.SessionID != "s" || k.CacheSalt != "salt" ||
					k.Priority != 3 || k.DataParallelRank == nil || *k.DataParallelRank != 1 || k.ExternalReqID != "ext" {
					t.Errorf("child %d: %+v", i, k)
				}
				switch {
				case tt.wantSeeds == nil && k.SamplingParams.Seed != nil:
					t.Errorf("child %d seeded %d, want none", i, *k.SamplingParams.Seed)
				case tt.wantSeeds != nil && (k.SamplingParams.Seed == nil || *k.SamplingParams.Seed != tt.wantSeeds[i]):
					t.Errorf("child %d seed %v, want %d", i, k.SamplingParams.Seed, tt.wantSeeds[i])
				}
			}
			if parent.RequestID != "req" || parent.SamplingParams.N != tt.n || parent.SamplingParams.Seed != tt.seed {
				t.Errorf("Children changed the parent: %+v", parent)
			}
		})
	}
}
