// Package decisions is the pure core of POST /v1/decisions, vLLM 0.33's
// Decisions API (vllm/entrypoints/openai/decisions): typed questions
// (predicate, choice, score) about a text input, each answered with a
// probability for every allowed answer.
//
// Each question is one read, vLLM's NextTokenStrategy, which Tandem runs
// for every chat model: the user turn is the input, then the question and
// its options labelled A, B, C… ("Answer with the letter of one option
// only."); the read is the reply's first token, generated greedily with
// the labels' logprobs (logprob_token_ids); a softmax over the labels
// gives the probabilities, and their total probability (label mass)
// scales the confidence. This package validates requests, writes each
// question's user turn and builds answers from label logprobs; it does no
// I/O. frontend/server renders, tokenizes and runs the reads.
package decisions
