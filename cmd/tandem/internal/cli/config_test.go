package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    []Entry
		wantErr string
	}{
		{"empty", "", nil, ""},
		{"comment only", "# nothing\n", nil, ""},
		{"scalars", "port: 8001\nthreads: 2\nrouting: prefix\ngpu_memory_utilization: 0.9\nenable-prefix-caching: false\nkv-cache-memory: 64Mi\n",
			[]Entry{{"enable-prefix-caching", "false"}, {"gpu_memory_utilization", "0.9"}, {"kv-cache-memory", "64Mi"},
				{"port", "8001"}, {"routing", "prefix"}, {"threads", "2"}}, ""},
		{"list joins with commas", "engines:\n  - tcp://a:5555\n  - tcp://b:5555\n", []Entry{{"engines", "tcp://a:5555,tcp://b:5555"}}, ""},
		{"flow list", "engines: [x, 2, true]", []Entry{{"engines", "x,2,true"}}, ""},
		{"quoted", `model: "my model.gguf"`, []Entry{{"model", "my model.gguf"}}, ""},
		{"null", "port:\n", nil, `key "port": empty; want a scalar or a list`},
		{"mapping", "port: {a: 1}", nil, `key "port": a mapping; want a scalar or a list`},
		{"nested list", "engines: [[a]]", nil, `key "engines": item 1 is a list; want a scalar`},
		{"not a mapping", "- port\n", nil, "want a mapping of flag names to values, not a list"},
		{"bad yaml", "port: [", nil, "yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseConfig = %v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfig (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigMerge: the file sets what the command line leaves unset; the
// command line (flags and the positional model) wins; aliases count as
// the same flag; bad files name the key and the file.
func TestConfigMerge(t *testing.T) {
	const file = "model: file.gguf\nport: 8001\nthreads: 2\nrouting: prefix\nheartbeat_interval: 250ms\nengines: [a, b]\n"
	fromFile := func(s *settings) {
		s.Model, s.Port, s.Threads, s.Routing, s.Interval, s.Engines = "file.gguf", 8001, 2, "prefix", 250*time.Millisecond, "a,b"
	}
	tests := []struct {
		name    string
		yaml    string
		args    []string // --config FILE is added
		want    func(*settings)
		wantErr string
	}{
		{"file only", file, nil, fromFile, ""},
		{"flag wins", file, []string{"--port", "9000", "--routing=session"}, func(s *settings) { fromFile(s); s.Port, s.Routing = 9000, "session" }, ""},
		{"flag wins even at its default", file, []string{"--port", "8000"}, func(s *settings) { fromFile(s); s.Port = 8000 }, ""},
		{"positional wins", file, []string{"cli.gguf"}, func(s *settings) { fromFile(s); s.Model = "cli.gguf" }, ""},
		{"--model wins", file, []string{"--model", "cli.gguf"}, func(s *settings) { fromFile(s); s.Model = "cli.gguf" }, ""},
		{"alias set on the line", "input-file: file.jsonl\n", []string{"-i", "cli.jsonl"}, func(s *settings) { s.Input = "cli.jsonl" }, ""},
		{"alias in the file", "i: file.jsonl\n", nil, func(s *settings) { s.Input = "file.jsonl" }, ""},
		{"bool off", "enable_prefix_caching: false\n", nil, func(s *settings) { s.Prefix = false }, ""},
		{"unknown key", "prot: 8001\n", nil, nil, `serve.yaml: unknown key "prot" (no such flag of tandem serve)`},
		{"bad value", "port: eighty\n", nil, nil, `serve.yaml: port: parse error`},
		{"config in config", "config: other.yaml\n", nil, nil, `key "config": a config file cannot name another`},
		{"alias twice", "i: a\ninput_file: b\n", nil, nil, `keys "i" and "input_file" set the same flag`},
		{"spellings twice", "heartbeat-interval: 1s\nheartbeat_interval: 2s\n", nil, nil, `keys "heartbeat-interval" and "heartbeat_interval" set the same flag`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.yaml)
			var got settings
			err := testCommand(&got).Parse(append([]string{"--config", path}, tt.args...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v, want error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var s settings
	if err := testCommand(&s).Parse([]string{"--config", "/no/such/serve.yaml"}); err == nil || !strings.Contains(err.Error(), "/no/such/serve.yaml") {
		t.Errorf("missing config file: %v", err)
	}
}
