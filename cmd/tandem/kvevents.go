package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/wire"
)

// kvEventsConfig is --kv-events-config: vLLM's KVEventsConfig
// (vllm/config/kv_events.py, 0.33.0) as JSON, plus Tandem's "layout".
// docs/wire.md §10 and docs/cli.md say what each field does here.
type kvEventsConfig struct {
	EnableKVCacheEvents bool    `json:"enable_kv_cache_events"`
	Publisher           string  `json:"publisher"` // "zmq" or "null"; default: zmq when enabled
	Endpoint            string  `json:"endpoint"`  // PUB endpoint to bind; default tcp://*:5557
	ReplayEndpoint      *string `json:"replay_endpoint"`
	BufferSteps         int     `json:"buffer_steps"`   // batches kept for replay
	HWM                 int     `json:"hwm"`            // PUB send high-water mark, messages
	MaxQueueSize        int     `json:"max_queue_size"` // batches waiting to be sent
	Topic               string  `json:"topic"`          // may hold {pod}, {model} and {rank}
	Layout              string  `json:"layout"`         // Tandem: "map" (default) or "array"
}

// kvEventsDefaults are vLLM's defaults.
func kvEventsDefaults() kvEventsConfig {
	return kvEventsConfig{Endpoint: "tcp://*:5557", BufferSteps: 10_000, HWM: 100_000, MaxQueueSize: 100_000}
}

// parseKVEventsConfig reads the flag's JSON. Unknown keys are an error
// (a typo would otherwise silently publish nothing).
func parseKVEventsConfig(s string) (kvEventsConfig, error) {
	c := kvEventsDefaults()
	if strings.TrimSpace(s) == "" {
		s = "{}"
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("--kv-events-config: %w", err)
	}
	if c.Publisher == "" {
		c.Publisher = "null"
		if c.EnableKVCacheEvents {
			c.Publisher = "zmq"
		}
	}
	switch {
	case c.Publisher != "zmq" && c.Publisher != "null":
		return c, fmt.Errorf("--kv-events-config: publisher %q: want zmq or null", c.Publisher)
	case c.BufferSteps < 0 || c.HWM < 0 || c.MaxQueueSize < 0:
		return c, errors.New("--kv-events-config: buffer_steps, hwm and max_queue_size must be ≥ 0")
	case c.enabled() && c.Endpoint == "":
		return c, errors.New("--kv-events-config: endpoint is empty")
	}
	if _, err := wire.ParseKVLayout(c.Layout); err != nil {
		return c, fmt.Errorf("--kv-events-config: %w", err)
	}
	return c, nil
}

// enabled reports whether the engine publishes KV events on Endpoint.
func (c kvEventsConfig) enabled() bool { return c.EnableKVCacheEvents && c.Publisher == "zmq" }

// replay is the replay endpoint, "" for none.
func (c kvEventsConfig) replay() string {
	if c.ReplayEndpoint == nil {
		return ""
	}
	return *c.ReplayEndpoint
}

// forRank is the config of engine rank of tandem serve: the endpoints
// offset as vLLM offsets them per data-parallel rank (offsetEndpoint).
func (c kvEventsConfig) forRank(rank int) (kvEventsConfig, error) {
	var err error
	if c.Endpoint, err = offsetEndpoint(c.Endpoint, rank); err != nil {
		return c, err
	}
	if r := c.replay(); r != "" {
		r, err = offsetEndpoint(r, rank)
		c.ReplayEndpoint = &r
	}
	return c, err
}

// JSON is the config as the flag takes it.
func (c kvEventsConfig) JSON() string {
	b, _ := json.Marshal(c) // plain fields: cannot fail
	return string(b)
}

// offsetEndpoint is vLLM's ZmqEventPublisher.offset_endpoint_port: rank 0
// keeps the endpoint; tcp:// adds rank to the port (port 0 stays 0: the
// OS picks); inproc:// appends "_dp<rank>", and so does ipc:// here (vLLM
// refuses ipc for ranks > 0).
func offsetEndpoint(ep string, rank int) (string, error) {
	if ep == "" || rank == 0 {
		return ep, nil
	}
	switch {
	case strings.HasPrefix(ep, "tcp://"):
		i := strings.LastIndexByte(ep, ':')
		port, err := strconv.Atoi(ep[i+1:])
		if i < len("tcp://") || err != nil {
			return "", fmt.Errorf("--kv-events-config: endpoint %q has no port", ep)
		}
		if port == 0 {
			return ep, nil
		}
		return ep[:i+1] + strconv.Itoa(port+rank), nil
	case strings.HasPrefix(ep, "ipc://"), strings.HasPrefix(ep, "inproc://"):
		return fmt.Sprintf("%s_dp%d", ep, rank), nil
	}
	return "", fmt.Errorf("--kv-events-config: endpoint %q: want tcp://, ipc:// or inproc://", ep)
}

// kvTopic expands the topic's placeholders: {pod} the pod id
// (--kv-events-pod-id, else $POD_NAME, else the host name), {model} the
// served model name, {rank} the engine's data-parallel rank. With
// topic "kv@{pod}@{model}" an engine publishes under llm-d's
// kv@<pod-id>@<model>.
func kvTopic(topic, podID, model string, rank int) string {
	if !strings.Contains(topic, "{") {
		return topic
	}
	if podID == "" {
		podID = os.Getenv("POD_NAME")
	}
	if podID == "" {
		podID, _ = os.Hostname()
	}
	return strings.NewReplacer("{pod}", podID, "{model}", model, "{rank}", strconv.Itoa(rank)).Replace(topic)
}

// engineKVEvents is the enginecore side of the config.
func (c kvEventsConfig) engineKVEvents(podID, model string, rank int) enginecore.KVEventsConfig {
	layout, _ := wire.ParseKVLayout(c.Layout) // checked by parseKVEventsConfig
	return enginecore.KVEventsConfig{Topic: kvTopic(c.Topic, podID, model, rank), Layout: layout,
		BufferSteps: c.BufferSteps, QueueSize: c.MaxQueueSize}
}
