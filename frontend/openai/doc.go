// Package openai holds the OpenAI-compatible API types of the frontend:
// request types with their validation (chat, completions, responses,
// tokenize), response and streaming chunk types (including the Responses
// API's events), and the OpenAI error JSON. CheckUnsupported refuses vLLM
// fields whose features Tandem lacks, rather than ignoring them.
//
// Requests decode with [Decode], which turns malformed JSON and wrong types
// into a 400 [*Error] naming the offending field; unknown fields are ignored,
// as vLLM does. Validate then checks ranges the way vLLM's SamplingParams
// does. Every error a handler returns to a client is an [*Error], and it is
// rendered in one place with [Error.JSON]:
//
//	{"error":{"message":"…","type":"invalid_request_error","param":"temperature","code":null}}
//
// Error shape. vLLM uses {"error":{message, type, param, code}} with type
// names such as "BadRequestError" and the HTTP status as an integer code.
// OpenAI uses the same shape with type "invalid_request_error" (all 4xx,
// including 401 and 404), "server_error" (5xx), and a string code such as
// "context_length_exceeded" or null. Tandem follows OpenAI: the SDKs type code
// as a string (openai-go declares `Code string`), and clients match on the
// OpenAI codes. The HTTP status lives in [Error.Status], not in the body.
//
// The package is pure data and validation: it imports neither echo nor
// anything from enginecore, gpu or wire, and it does not resolve session ids
// (package session does, because that needs the headers).
//
// Usage:
//
//	var req openai.ChatCompletionRequest
//	if e := openai.Decode(body, &req); e != nil {
//		return e // 400
//	}
//	if e := req.Validate(); e != nil {
//		return e // 400 with param set
//	}
//	n := req.NumChoices()
package openai
