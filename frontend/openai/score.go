package openai

import (
	"encoding/json"
	"fmt"
)

// ScoreRequest is vLLM's /score body (and llama-server's and the
// rerankers' /rerank, RerankPairs): the first texts against the second,
// one score per pair. The two sides have several names across vLLM's
// versions: queries/documents, queries/items, data_1/data_2 and
// text_1/text_2; each is a string or an array of strings, paired 1:1,
// 1:N (the one first text against every second) or N:N.
type ScoreRequest struct {
	Params
	Queries   json.RawMessage `json:"queries"`
	Documents json.RawMessage `json:"documents"`
	Items     json.RawMessage `json:"items"`
	Data1     json.RawMessage `json:"data_1"`
	Data2     json.RawMessage `json:"data_2"`
	Text1     json.RawMessage `json:"text_1"`
	Text2     json.RawMessage `json:"text_2"`
	ScoreOptions
}

// ScoreOptions are what /score, /rerank and /classify share: vLLM's
// use_activation (also activation, its earlier name; default true:
// sigmoid for a one-class head, softmax for more) and its per-side
// truncation.
type ScoreOptions struct {
	UseActivation     *bool `json:"use_activation,omitempty"`
	Activation        *bool `json:"activation,omitempty"`
	MaxTokensPerQuery int   `json:"max_tokens_per_query,omitempty"`
	MaxTokensPerDoc   int   `json:"max_tokens_per_doc,omitempty"`
}

// Activate reports whether scores go through the head's activation.
func (o *ScoreOptions) Activate() bool {
	switch {
	case o.UseActivation != nil:
		return *o.UseActivation
	case o.Activation != nil:
		return *o.Activation
	}
	return true
}

// Validate checks the sides and their pairing.
func (r *ScoreRequest) Validate() *Error {
	if r.MaxTokensPerQuery < 0 || r.MaxTokensPerDoc < 0 {
		return BadRequest("max_tokens_per_query", "max_tokens_per_query and max_tokens_per_doc must be non-negative.")
	}
	_, _, e := r.Sides()
	return e
}

// Sides returns the first and second texts, paired: both the same
// length (the first repeated for 1:N).
func (r *ScoreRequest) Sides() (first, second []string, e *Error) {
	a, b, na, nb := r.Queries, r.Documents, "queries", "documents"
	switch {
	case !absent(r.Queries) && !absent(r.Items):
		b, nb = r.Items, "items"
	case !absent(r.Data1) || !absent(r.Data2):
		a, b, na, nb = r.Data1, r.Data2, "data_1", "data_2"
	case !absent(r.Text1) || !absent(r.Text2):
		a, b, na, nb = r.Text1, r.Text2, "text_1", "text_2"
	}
	if first, e = scoreTexts(a, na); e != nil {
		return nil, nil, e
	}
	if second, e = scoreTexts(b, nb); e != nil {
		return nil, nil, e
	}
	switch {
	case len(first) == 1:
		for len(first) < len(second) {
			first = append(first, first[0])
		}
	case len(first) != len(second):
		return nil, nil, BadRequest(na, "Input lengths must be either 1:1, 1:N or N:N (got %d %s and %d %s).", len(first), na, len(second), nb)
	}
	return first, second, nil
}

// scoreTexts reads one side: a string or a non-empty array of strings,
// at most MaxPrompts.
func scoreTexts(v json.RawMessage, name string) ([]string, *Error) {
	if absent(v) {
		return nil, BadRequest(name, "'%s' is required: a string or an array of strings.", name)
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(v, &many); err != nil {
		return nil, BadRequest(name, "'%s' must be a string or an array of strings.", name)
	}
	switch {
	case len(many) == 0:
		return nil, BadRequest(name, "At least one element of '%s' must be given.", name)
	case len(many) > MaxPrompts:
		return nil, BadRequest(name, "'%s' holds %d texts; at most %d per request.", name, len(many), MaxPrompts)
	}
	return many, nil
}

// RerankRequest is vLLM's /rerank, /v1/rerank and /v2/rerank body (Jina's
// and Cohere's API) and llama-server's /rerank: a query and the documents
// to rank by it. llama-server's texts (Hugging Face TEI's API) stands
// for documents and asks for TEI's answer, a bare array.
type RerankRequest struct {
	Params
	Query     json.RawMessage `json:"query"`
	Documents json.RawMessage `json:"documents"`
	Texts     json.RawMessage `json:"texts"`
	// TopN keeps the n best (0 or absent: all).
	TopN *int `json:"top_n,omitempty"`
	// ReturnDocuments (Cohere's, Jina's; default true here, as vLLM
	// always returns them) and ReturnText (TEI's, default false).
	ReturnDocuments *bool `json:"return_documents,omitempty"`
	ReturnText      bool  `json:"return_text,omitempty"`
	ScoreOptions
}

// Validate checks the query, the documents and top_n.
func (r *RerankRequest) Validate() *Error {
	var q string
	if absent(r.Query) || json.Unmarshal(r.Query, &q) != nil {
		return BadRequest("query", "'query' must be a string.")
	}
	if r.TopN != nil && *r.TopN < 0 {
		return BadRequest("top_n", "'top_n' must be non-negative.")
	}
	_, e := r.Docs()
	return e
}

// TEI reports whether the request asked in TEI's form (texts).
func (r *RerankRequest) TEI() bool { return absent(r.Documents) && !absent(r.Texts) }

// QueryText is the query (Validate checked it).
func (r *RerankRequest) QueryText() string {
	var q string
	_ = json.Unmarshal(r.Query, &q)
	return q
}

// Docs returns the documents (or TEI's texts).
func (r *RerankRequest) Docs() ([]string, *Error) {
	v, name := r.Documents, "documents"
	if r.TEI() {
		v, name = r.Texts, "texts"
	}
	if absent(v) {
		return nil, BadRequest("documents", "\"documents\" must be a non-empty string array")
	}
	var docs []string
	if err := json.Unmarshal(v, &docs); err != nil || len(docs) == 0 {
		return nil, BadRequest(name, "%q must be a non-empty string array", name)
	}
	if len(docs) > MaxPrompts {
		return nil, BadRequest(name, "'%s' holds %d documents; at most %d per request.", name, len(docs), MaxPrompts)
	}
	return docs, nil
}

// ScoreData is one score of a ScoreResponse.
type ScoreData struct {
	Index  int     `json:"index"`
	Object string  `json:"object"` // "score"
	Score  float64 `json:"score"`
}

// ScoreResponse is vLLM's /score answer.
type ScoreResponse = List[ScoreData]

// RerankDocument is a ranked document's text.
type RerankDocument struct {
	Text string `json:"text"`
}

// RerankResult is one ranked document: its index in the request.
type RerankResult struct {
	Index          int             `json:"index"`
	Document       *RerankDocument `json:"document,omitempty"`
	RelevanceScore float64         `json:"relevance_score"`
}

// RerankUsage counts the prompt tokens scored.
type RerankUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// RerankResponse is vLLM's (Jina's, Cohere's) /rerank answer, with
// llama-server's "object".
type RerankResponse struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"` // "list"
	Model   string         `json:"model"`
	Usage   RerankUsage    `json:"usage"`
	Results []RerankResult `json:"results"`
}

// TEIRank is one item of TEI's rerank answer.
type TEIRank struct {
	Index int     `json:"index"`
	Score float64 `json:"score"`
	Text  *string `json:"text,omitempty"`
}

// ClassificationRequest is vLLM's /classify body: input is a string or
// an array of strings (or token ids, as for embeddings).
type ClassificationRequest struct {
	Params
	Input json.RawMessage `json:"input"`
	ScoreOptions
	ChatInput
}

// Validate checks that there is an input.
func (r *ClassificationRequest) Validate() *Error {
	if absent(r.Input) && absent(r.Messages) {
		return BadRequest("input", "'input' (or 'messages') must be a string, an array of strings, an array of token ids, or conversations.")
	}
	return r.ChatInput.validate()
}

// ClassificationData is one input's classes.
type ClassificationData struct {
	Index      int       `json:"index"`
	Label      string    `json:"label"` // the most probable class's
	Probs      []float64 `json:"probs"` // [num_classes], after the activation
	NumClasses int       `json:"num_classes"`
}

// ClassificationResponse is vLLM's /classify answer.
type ClassificationResponse = List[ClassificationData]

// PoolingRequest is vLLM's /pooling body: inputs as for embeddings, and
// the task (embed, classify, score; default: classify for a model with a
// classification head, else embed).
type PoolingRequest struct {
	EmbeddingRequest
	Task string `json:"task,omitempty"`
	ScoreOptions
}

// Validate checks the task and the embedding fields.
func (r *PoolingRequest) Validate() *Error {
	switch r.Task {
	case "", "embed", "classify", "score":
	default:
		return BadRequest("task", "%s", fmt.Sprintf("task %q: want embed, classify or score", r.Task))
	}
	return r.EmbeddingRequest.Validate()
}

// PoolingData is one input's pooled output.
type PoolingData struct {
	Index  int    `json:"index"`
	Object string `json:"object"` // "pooling"
	Data   any    `json:"data"`   // []float32 / []float64, or base64
}

// PoolingResponse is vLLM's /pooling answer.
type PoolingResponse = List[PoolingData]
