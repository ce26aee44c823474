package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// parsePooling reads a pooling type in either case.
func parsePooling(s string) (string, error) {
	switch t := strings.ToUpper(s); t {
	case wire.PoolingLast, wire.PoolingMean, wire.PoolingCLS:
		return t, nil
	}
	return "", fmt.Errorf("%q: want last, mean or cls", s)
}
