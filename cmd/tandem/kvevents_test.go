package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKVEventsConfig(t *testing.T) {
	replay := "tcp://*:5558"
	tests := []struct {
		name, in string
		want     kvEventsConfig
		err      string
	}{
		{"empty: vLLM's defaults, off", "",
			kvEventsConfig{Publisher: "null", Endpoint: "tcp://*:5557", BufferSteps: 10000, HWM: 100000, MaxQueueSize: 100000}, ""},
		{"enabled picks zmq", `{"enable_kv_cache_events": true}`,
			kvEventsConfig{EnableKVCacheEvents: true, Publisher: "zmq", Endpoint: "tcp://*:5557", BufferSteps: 10000, HWM: 100000, MaxQueueSize: 100000}, ""},
		{"all fields", `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:6000","replay_endpoint":"tcp://*:5558",` +
			`"topic":"kv@{pod}@{model}","buffer_steps":5,"hwm":7,"max_queue_size":9,"layout":"array"}`,
			kvEventsConfig{EnableKVCacheEvents: true, Publisher: "zmq", Endpoint: "tcp://*:6000", ReplayEndpoint: &replay,
				Topic: "kv@{pod}@{model}", BufferSteps: 5, HWM: 7, MaxQueueSize: 9, Layout: "array"}, ""},
		{"null publisher", `{"enable_kv_cache_events":true,"publisher":"null"}`,
			kvEventsConfig{EnableKVCacheEvents: true, Publisher: "null", Endpoint: "tcp://*:5557", BufferSteps: 10000, HWM: 100000, MaxQueueSize: 100000}, ""},
		{"unknown key", `{"enable_kv_cache_event": true}`, kvEventsConfig{}, "unknown field"},
		{"bad publisher", `{"publisher":"nats"}`, kvEventsConfig{}, "want zmq or null"},
		{"bad layout", `{"layout":"tuple"}`, kvEventsConfig{}, "want map or array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseKVEventsConfig(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if back, err := parseKVEventsConfig(got.JSON()); err != nil || !cmp.Equal(back, got) {
				t.Errorf("JSON round trip: %+v, %v", back, err)
			}
		})
	}
}

func TestOffsetEndpoint(t *testing.T) {
	tests := []struct {
		ep   string
		rank int
		want string
	}{
		{"tcp://*:5557", 0, "tcp://*:5557"},
		{"tcp://*:5557", 2, "tcp://*:5559"},
		{"tcp://[::1]:5557", 1, "tcp://[::1]:5558"},
		{"tcp://0.0.0.0:0", 3, "tcp://0.0.0.0:0"},
		{"ipc:///tmp/kv.sock", 1, "ipc:///tmp/kv.sock_dp1"},
		{"inproc://kv", 2, "inproc://kv_dp2"},
		{"tcp://host", 1, ""},
	}
	for _, tt := range tests {
		got, err := offsetEndpoint(tt.ep, tt.rank)
		if (err != nil) != (tt.want == "") || got != tt.want {
			t.Errorf("offsetEndpoint(%q, %d) = %q, %v; want %q", tt.ep, tt.rank, got, err, tt.want)
		}
	}
}

func TestKVTopic(t *testing.T) {
	t.Setenv("POD_NAME", "tandem-engine-1")
	tests := []struct{ topic, pod, want string }{
		{"", "", ""},
		{"kv", "", "kv"},
		{"kv@{pod}@{model}", "", "kv@tandem-engine-1@smol"},
		{"kv@{pod}-{rank}@{model}", "p", "kv@p-2@smol"},
	}
	for _, tt := range tests {
		if got := kvTopic(tt.topic, tt.pod, "smol", 2); got != tt.want {
			t.Errorf("kvTopic(%q, %q) = %q, want %q", tt.topic, tt.pod, got, tt.want)
		}
	}
}
