// Package vllm speaks vLLM 0.33's engine-core wire protocol byte for byte.
package vllm
