// Package cohere is Cohere's embed API as vLLM serves it (POST /v2/embed)
// and as Cohere's older clients call it (POST /v1/embed), so that
// Cohere's SDKs (cohere.Client.embed, cohere.ClientV2.embed) and the
// tools built on them work unchanged against Tandem: a request's texts
// (or its inputs' text parts) are embedded as /v1/embeddings embeds them,
// and the answer goes back in Cohere's shapes, the embeddings by type
// (float, base64, binary, ubinary) or, on /v1/embed without
// embedding_types, as plain floats. Cohere's rerank API is served by the
// rerank routes (frontend/server/score.go).
//
// The package is pure: it decodes, checks and builds values, and does no
// I/O; frontend/server mounts the routes. docs/api.md#cohere-embed says
// what is served.
package cohere
