package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/wire"
)

// poolingType is the engine's default embedding pooling from --pooling
// (llama-server's: last, mean, cls) and --pooler-config (vLLM's JSON,
// whose pooling_type it reads); "" when neither says. Both set must agree.
func poolingType(flag, poolerConfig string) (string, error) {
	var fromFlag, fromConfig string
	if flag != "" {
		t, err := parsePooling(flag)
		if err != nil {
			return "", fmt.Errorf("--pooling: %w", err)
		}
		fromFlag = t
	}
	if poolerConfig != "" {
		var cfg struct {
			PoolingType *string `json:"pooling_type"`
			Normalize   *bool   `json:"normalize"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(poolerConfig)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return "", fmt.Errorf("--pooler-config: %w (Tandem reads pooling_type and normalize)", err)
		}
		if cfg.Normalize != nil && !*cfg.Normalize {
			return "", fmt.Errorf("--pooler-config: normalize false: embeddings are normalized unless a request says \"normalize\": false")
		}
		if cfg.PoolingType != nil {
			t, err := parsePooling(*cfg.PoolingType)
			if err != nil {
				return "", fmt.Errorf("--pooler-config: pooling_type: %w", err)
			}
			fromConfig = t
		}
	}
	if fromFlag != "" && fromConfig != "" && fromFlag != fromConfig {
		return "", fmt.Errorf("--pooling %s and --pooler-config's pooling_type %s disagree", fromFlag, fromConfig)
	}
	if fromFlag != "" {
		return fromFlag, nil
	}
	return fromConfig, nil
}

// parsePooling reads a pooling type in either case: last, mean, cls,
// or none (llama-server's; vLLM's ALL says the same: every token's
// vector, on /embedding only).
func parsePooling(s string) (string, error) {
	switch t := strings.ToUpper(s); t {
	case wire.PoolingLast, wire.PoolingMean, wire.PoolingCLS, wire.PoolingNone:
		return t, nil
	case "ALL":
		return wire.PoolingNone, nil
	}
	return "", fmt.Errorf("%q: want last, mean, cls or none", s)
}

// embedFlags are vLLM's and llama-server's switches to an embedding
// server: vLLM's --runner pooling, --convert embed and older --task
// embed, llama-server's --embedding(s). Every Tandem model embeds next to
// generating, so they change nothing; they are read, so a command line
// written for vLLM or llama-server starts, and checked, so what Tandem
// does not serve (classify, score, reward) says so instead of being
// dropped.
type embedFlags struct {
	runner, convert, task string
	embeddings            bool
}

func (f *embedFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.runner, "runner", "auto", "vLLM's `runner`: auto, generate or pooling; Tandem serves generation and /v1/embeddings from every model, so it changes nothing")
	fs.StringVar(&f.convert, "convert", "auto", "vLLM's `conversion`: auto, none or embed; as --runner, nothing to change (classify and reward are not served)")
	fs.StringVar(&f.task, "task", "auto", "vLLM's older `task`: auto, generate, embed or embedding; as --runner")
	fs.BoolVar(&f.embeddings, "embeddings", false, "llama-server's flag; Tandem always serves /v1/embeddings (and /embedding)")
	fs.BoolVar(&f.embeddings, "embedding", false, "alias of --embeddings")
}

// check refuses the values that ask for what Tandem does not serve.
func (f *embedFlags) check() error {
	for _, c := range []struct {
		name, value string
		ok          []string
	}{
		{"runner", f.runner, []string{"auto", "generate", "pooling", "draft"}},
		{"convert", f.convert, []string{"auto", "none", "embed"}},
		{"task", f.task, []string{"auto", "generate", "embed", "embedding"}},
	} {
		if !slices.Contains(c.ok, c.value) {
			return fmt.Errorf("--%s %s: Tandem serves generation and embeddings (want one of %s); classification, scoring and reward models are not served",
				c.name, c.value, strings.Join(c.ok, ", "))
		}
	}
	return nil
}
