package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// oracleScript is scripts/oracle/logits.mjs, relative to this package.
const oracleScript = "../../scripts/oracle/logits.mjs"

// oracleRequest is logits.mjs's request; see the protocol at the top of
// the script.
type oracleRequest struct {
	Model    string          `json:"model"`
	Prompts  [][]int32       `json:"prompts,omitempty"`  // [prompt][token]
	From     []int           `json:"from,omitempty"`     // [prompt] first position whose distribution comes back; nil: 0
	TopK     int             `json:"topk,omitempty"`     // oracle's top tokens per position
	Probe    []int32         `json:"probe,omitempty"`    // ids whose log-probs come back at every position
	Tokenize []string        `json:"tokenize,omitempty"` // texts, special tokens parsed, no BOS added
	Greedy   []greedyRequest `json:"greedy,omitempty"`
	Embed    [][]int32       `json:"embed,omitempty"` // prompts to embed (llama.cpp adds BOS/EOS as it would)
	LoRA     []oracleLoRA    `json:"lora,omitempty"`  // adapters applied to every evaluation
	Rank     [][]int32       `json:"rank,omitempty"`  // prompts a reranker scores, tokens as given
}

type oracleLoRA struct {
	Path  string  `json:"path"`
	Scale float64 `json:"scale"`
}

type greedyRequest struct {
	Prompt []int32 `json:"prompt"`
	N      int     `json:"n"` // tokens to generate
}

// oracleResponse is logits.mjs's answer.
type oracleResponse struct {
	Vocab   int            `json:"vocab"`   // entries per distribution
	Prompts [][]oraclePos  `json:"prompts"` // [prompt][position]
	Tokens  [][]int32      `json:"tokens"`  // [text][token]
	Greedy  []greedyResult `json:"greedy"`
	// Embeddings are llama.cpp's of each Embed prompt: the tokens it
	// evaluated and its vector (not normalized).
	Embeddings []struct {
		Tokens []int32   `json:"tokens"`
		Vector []float64 `json:"vector"`
	} `json:"embeddings"`
	// Ranks are llama.cpp's rank-pooling scores of each Rank prompt (a
	// qwen3 reranker's: the softmax of its head's logits, class 0).
	Ranks []float64 `json:"ranks"`
}

// oraclePos is the oracle's distribution of the token after positions
// 0..i of a prompt. A nil log-prob is a probability that underflowed.
type oraclePos struct {
	Argmax   int32      `json:"argmax"`
	TopIDs   []int32    `json:"topIds"`   // [topk] most probable first
	TopLogps []*float64 `json:"topLogps"` // [topk] nats
	Probe    []*float64 `json:"probe"`    // [len(probe)] nats
}

type greedyResult struct {
	Tokens  []int32   `json:"tokens"`  // [≤ n] generated ids
	Margins []float64 `json:"margins"` // [≤ n] logp(top-1) − logp(top-2), nats
}

// oracleCmd returns the command running logits.mjs, or skips t saying
// what is missing.
func oracleCmd(ctx context.Context, t *testing.T) *exec.Cmd {
	t.Helper()
	modules := os.Getenv("TANDEM_ORACLE_NODE_MODULES")
	if modules == "" {
		t.Skip("TANDEM_ORACLE_NODE_MODULES is unset (run `make oracle`, or `make test`, which sets it)")
	}
	if _, err := os.Stat(filepath.Join(modules, "node-llama-cpp", "dist", "index.js")); err != nil {
		t.Skipf("TANDEM_ORACLE_NODE_MODULES=%s has no node-llama-cpp (run `make oracle`): %v", modules, err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@node-llama-cpp", "linux-x64")); err != nil {
		t.Skipf("TANDEM_ORACLE_NODE_MODULES=%s has no @node-llama-cpp/linux-x64 prebuilt libraries: %v", modules, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH (apt-get install -y nodejs)")
	}
	script, err := filepath.Abs(oracleScript)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "TANDEM_ORACLE_NODE_MODULES="+modules)
	return cmd
}

// runOracle sends reqs to logits.mjs in one run and decodes its answers;
// it fails t when the script fails.
func runOracle(t *testing.T, reqs ...oracleRequest) []oracleResponse {
	t.Helper()
	return startOracle(t, reqs...)()
}

// startOracle starts logits.mjs on reqs and returns a function that
// waits for its answers (call it from t's goroutine). It skips t when
// the oracle is missing.
func startOracle(t *testing.T, reqs ...oracleRequest) (wait func() []oracleResponse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	cmd := oracleCmd(ctx, t)
	in, err := json.Marshal(reqs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	var runErr error
	finished := make(chan struct{})
	go func() { runErr = cmd.Run(); close(finished) }()
	t.Cleanup(func() { cancel(); <-finished }) // t failed before waiting: stop node
	return func() []oracleResponse {
		t.Helper()
		<-finished
		if runErr != nil {
			t.Fatalf("oracle: %v\nstderr: %s", runErr, stderr.Bytes())
		}
		var resps []oracleResponse
		if err := json.Unmarshal(stdout.Bytes(), &resps); err != nil {
			t.Fatalf("oracle: decoding its answer: %v\nstderr: %s", err, stderr.Bytes())
		}
		if len(resps) != len(reqs) {
			t.Fatalf("oracle: %d answers to %d requests", len(resps), len(reqs))
		}
		for i := range reqs {
			checkResponse(t, &reqs[i], &resps[i])
		}
		return resps
	}
}

// checkResponse fails t when resp does not have the shape req asks for.
func checkResponse(t *testing.T, req *oracleRequest, resp *oracleResponse) {
	t.Helper()
	if len(resp.Embeddings) != len(req.Embed) {
		t.Fatalf("oracle on %s: %d embeddings for %d prompts", req.Model, len(resp.Embeddings), len(req.Embed))
	}
	if len(resp.Prompts) != len(req.Prompts) || len(resp.Tokens) != len(req.Tokenize) || len(resp.Greedy) != len(req.Greedy) {
		t.Fatalf("oracle on %s: %d/%d/%d answers for %d prompts, %d texts, %d greedy runs", req.Model,
			len(resp.Prompts), len(resp.Tokens), len(resp.Greedy), len(req.Prompts), len(req.Tokenize), len(req.Greedy))
	}
	for i, p := range resp.Prompts {
		from := 0
		if i < len(req.From) {
			from = req.From[i]
		}
		if len(p) != len(req.Prompts[i])-from {
			t.Fatalf("oracle on %s: prompt %d: %d positions for %d tokens from %d", req.Model, i, len(p), len(req.Prompts[i]), from)
		}
		for j, pos := range p {
			if len(pos.Probe) != len(req.Probe) || len(pos.TopIDs) != len(pos.TopLogps) || len(pos.TopIDs) == 0 {
				t.Fatalf("oracle on %s: prompt %d position %d: malformed entry", req.Model, i, j)
			}
		}
	}
}
