package cohere

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// EmbedRequest is POST /v1/embed's and /v2/embed's body (Cohere's
// EmbedRequest and V2EmbedRequest; vLLM's CohereEmbedRequest).
type EmbedRequest struct {
	Model string `json:"model"`
	// InputType names what the texts are for (search_document,
	// search_query, classification, clustering, image). Cohere's own
	// models prefix a task instruction by it; a model without such
	// instructions embeds the texts as they are.
	InputType string `json:"input_type,omitempty"`
	// Texts are embedded one each, in order; exactly one of Texts,
	// Images and Inputs is given.
	Texts  []string     `json:"texts,omitempty"`
	Images []string     `json:"images,omitempty"` // data URIs: refused, Tandem's models read text
	Inputs []EmbedInput `json:"inputs,omitempty"` // v2: one embedding per input, of its content's parts
	// OutputDimension keeps each embedding's first n values, normalized
	// again (Matryoshka); nil = all of them.
	OutputDimension *int `json:"output_dimension,omitempty"`
	// EmbeddingTypes are the encodings answered (default float).
	EmbeddingTypes []string `json:"embedding_types,omitempty"`
	// Truncate is NONE (too long is an error), START (drop the first
	// tokens) or END (drop the last; the default).
	Truncate string `json:"truncate,omitempty"`
	// MaxTokens bounds each input's tokens (v2): with truncate START or
	// END it is where an input is cut, with NONE a longer one is an
	// error; nil = the model's context.
	MaxTokens *int `json:"max_tokens,omitempty"`
	Priority  int  `json:"priority,omitempty"`
}

// EmbedInput is one of a v2 request's mixed inputs: parts of type text
// (embedded together, rendered as one user message) or image_url.
type EmbedInput struct {
	Content []EmbedContent `json:"content"`
}

// EmbedContent is a part of an EmbedInput.
type EmbedContent struct {
	Type     string            `json:"type"` // text or image_url
	Text     *string           `json:"text,omitempty"`
	ImageURL map[string]string `json:"image_url,omitempty"`
}

// InputTypes are the input_type values Cohere defines.
var InputTypes = []string{"search_document", "search_query", "classification", "clustering", "image"}

// EmbeddingTypes are the embedding_types answered: Cohere's int8 and
// uint8 are quantized with calibration Cohere does not publish, so they
// are refused, as vLLM refuses them.
var EmbeddingTypes = []string{"float", "base64", "binary", "ubinary"}

// Validate checks what needs no model: exactly one non-empty input
// field, known input, embedding and truncate values, positive sizes, and
// no images, as 400s naming the field. It fills Truncate's default.
func (r *EmbedRequest) Validate() *openai.Error {
	given := 0
	for _, n := range []int{len(r.Texts), len(r.Images), len(r.Inputs)} {
		if n > 0 {
			given++
		}
	}
	if given != 1 {
		return openai.BadRequest("texts", "Exactly one of texts, images, or inputs must be provided, and it must be non-empty")
	}
	if len(r.Images) > 0 {
		return openai.BadRequest("images", "images are not supported: the model reads text only")
	}
	for i, in := range r.Inputs {
		if len(in.Content) == 0 {
			return openai.BadRequest("inputs", "inputs[%d] has no content", i)
		}
		for j, c := range in.Content {
			switch {
			case c.Type == "text" && c.Text != nil:
			case c.Type == "text":
				return openai.BadRequest("inputs", "inputs[%d].content[%d] of type text has no text", i, j)
			case c.Type == "image_url":
				return openai.BadRequest("inputs", "inputs[%d].content[%d]: images are not supported: the model reads text only", i, j)
			default:
				return openai.BadRequest("inputs", "inputs[%d].content[%d] has type %q; want text or image_url", i, j, c.Type)
			}
		}
	}
	if r.InputType != "" && !slices.Contains(InputTypes, r.InputType) {
		return openai.BadRequest("input_type", "Unsupported input_type %q. Supported values: %s", r.InputType, strings.Join(InputTypes, ", "))
	}
	for _, t := range r.EmbeddingTypes {
		if !slices.Contains(EmbeddingTypes, t) {
			return openai.BadRequest("embedding_types", "Unsupported embedding type %q. Supported values: %s", t, strings.Join(EmbeddingTypes, ", "))
		}
	}
	switch r.Truncate {
	case "":
		r.Truncate = "END"
	case "NONE", "START", "END":
	default:
		return openai.BadRequest("truncate", "'truncate' must be NONE, START or END, got %q", r.Truncate)
	}
	if r.MaxTokens != nil && *r.MaxTokens < 1 {
		return openai.BadRequest("max_tokens", "'max_tokens' must be at least 1, got %d", *r.MaxTokens)
	}
	if r.OutputDimension != nil && *r.OutputDimension < 1 {
		return openai.BadRequest("output_dimension", "'output_dimension' must be at least 1, got %d", *r.OutputDimension)
	}
	return nil
}

// TextParts is each of Inputs' text parts, in order ([input][part]).
func (r *EmbedRequest) TextParts() [][]string {
	out := make([][]string, len(r.Inputs))
	for i, in := range r.Inputs {
		for _, c := range in.Content {
			out[i] = append(out[i], *c.Text)
		}
	}
	return out
}

// ByType holds the embeddings in each encoding asked for ([input][…]).
type ByType struct {
	Float   [][]float32 `json:"float,omitempty"`
	Base64  []string    `json:"base64,omitempty"`  // little-endian float32, base64
	Binary  [][]int     `json:"binary,omitempty"`  // sign bits packed MSB first, each byte minus 128
	Ubinary [][]int     `json:"ubinary,omitempty"` // sign bits packed MSB first
}

// Typed encodes vecs ([input][dim]) in each of types (default float).
// The binary forms pack one bit per value (1 when it is ≥ 0), eight to
// a byte, so dim must be a multiple of 8.
func Typed(vecs [][]float32, types []string) (ByType, error) {
	if len(types) == 0 {
		types = []string{"float"}
	}
	var out ByType
	for _, t := range types {
		switch t {
		case "float":
			out.Float = vecs
		case "base64":
			out.Base64 = make([]string, len(vecs))
			for i, v := range vecs {
				out.Base64[i] = openai.Base64Embedding(v)
			}
		case "binary", "ubinary":
			packed := make([][]int, len(vecs))
			for i, v := range vecs {
				if len(v)%8 != 0 {
					return ByType{}, fmt.Errorf("embedding dimension must be a multiple of 8 for binary embedding types, but got %d", len(v))
				}
				packed[i] = packBits(v, t == "binary")
			}
			if t == "binary" {
				out.Binary = packed
			} else {
				out.Ubinary = packed
			}
		}
	}
	return out, nil
}

// packBits packs v's sign bits (1 when ≥ 0), the first value in a
// byte's highest bit; signed subtracts 128 from each byte (Cohere's
// binary, an int8).
func packBits(v []float32, signed bool) []int {
	out := make([]int, len(v)/8)
	for i := range out {
		b := 0
		for j := range 8 {
			b <<= 1
			if v[8*i+j] >= 0 {
				b |= 1
			}
		}
		if signed {
			b -= 128
		}
		out[i] = b
	}
	return out
}

// Meta is an answer's meta: the API version and the tokens billed.
type Meta struct {
	APIVersion  APIVersion  `json:"api_version"`
	BilledUnits BilledUnits `json:"billed_units"`
}

// APIVersion names the API version an answer follows.
type APIVersion struct {
	Version string `json:"version"`
}

// BilledUnits counts an answer's input tokens.
type BilledUnits struct {
	InputTokens int `json:"input_tokens"`
}

// ByTypeResponse is /v2/embed's answer, and /v1/embed's when the
// request names embedding_types.
type ByTypeResponse struct {
	ID           string   `json:"id"`
	Embeddings   ByType   `json:"embeddings"`
	Texts        []string `json:"texts,omitempty"`
	Meta         Meta     `json:"meta"`
	ResponseType string   `json:"response_type"` // embeddings_by_type
}

// FloatsResponse is /v1/embed's answer when the request names no
// embedding_types.
type FloatsResponse struct {
	ID           string      `json:"id"`
	Embeddings   [][]float32 `json:"embeddings"`
	Texts        []string    `json:"texts"`
	Meta         Meta        `json:"meta"`
	ResponseType string      `json:"response_type"` // embeddings_floats
}

// Response is the answer to r from its embeddings ([input][dim]) and
// input token count: v1 without embedding_types gets plain floats,
// otherwise the embeddings by type. Texts echoes r.Texts.
func (r *EmbedRequest) Response(id string, v1 bool, vecs [][]float32, tokens int) (any, error) {
	version := "2"
	if v1 {
		version = "1"
	}
	meta := Meta{APIVersion: APIVersion{Version: version}, BilledUnits: BilledUnits{InputTokens: tokens}}
	if v1 && len(r.EmbeddingTypes) == 0 {
		texts := r.Texts
		if texts == nil {
			texts = []string{}
		}
		return FloatsResponse{ID: id, Embeddings: vecs, Texts: texts, Meta: meta, ResponseType: "embeddings_floats"}, nil
	}
	typed, err := Typed(vecs, r.EmbeddingTypes)
	if err != nil {
		return nil, err
	}
	return ByTypeResponse{ID: id, Embeddings: typed, Texts: r.Texts, Meta: meta, ResponseType: "embeddings_by_type"}, nil
}
