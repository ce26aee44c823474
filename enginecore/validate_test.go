package enginecore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire"
)

func TestValidateRequest(t *testing.T) {
	good := func() *wire.EngineCoreRequest {
		return &wire.EngineCoreRequest{RequestID: "r", PromptTokenIDs: []int32{1, 2}, SamplingParams: wire.DefaultSamplingParams()}
	}
	neg, big := -1, 21
	eos := int32(-3)
	tests := []struct {
		name string
		mod  func(r *wire.EngineCoreRequest)
		want string // "" = valid
	}{
		{"default", func(*wire.EngineCoreRequest) {}, ""},
		{"greedy with extras", func(r *wire.EngineCoreRequest) {
			r.SamplingParams.Temperature, r.SamplingParams.TopK, r.SamplingParams.LogitBias = 0, -1, map[int32]float64{1: 5, 99999: -100}
		}, ""},
		{"empty id", func(r *wire.EngineCoreRequest) { r.RequestID = "" }, "request_id is empty"},
		{"8 MB id", func(r *wire.EngineCoreRequest) { r.RequestID = strings.Repeat("x", 8<<20) }, "request_id of 8388608 bytes"},
		{"long session", func(r *wire.EngineCoreRequest) { r.SessionID = strings.Repeat("s", 2000) }, "session_id of 2000 bytes"},
		{"long salt", func(r *wire.EngineCoreRequest) { r.CacheSalt = strings.Repeat("s", 2000) }, "cache_salt"},
		{"empty prompt", func(r *wire.EngineCoreRequest) { r.PromptTokenIDs = nil }, "prompt is empty"},
		{"token past vocab", func(r *wire.EngineCoreRequest) { r.PromptTokenIDs = []int32{model.DummyVocabSize} }, "out of range [0, 320)"},
		{"negative token", func(r *wire.EngineCoreRequest) { r.PromptTokenIDs = []int32{-1} }, "out of range"},
		{"NaN temperature", func(r *wire.EngineCoreRequest) { r.SamplingParams.Temperature = math.NaN() }, "temperature"},
		{"negative temperature", func(r *wire.EngineCoreRequest) { r.SamplingParams.Temperature = -1 }, "temperature"},
		{"top_p 0", func(r *wire.EngineCoreRequest) { r.SamplingParams.TopP = 0 }, "top_p"},
		{"top_k -2", func(r *wire.EngineCoreRequest) { r.SamplingParams.TopK = -2 }, "top_k"},
		{"min_p 2", func(r *wire.EngineCoreRequest) { r.SamplingParams.MinP = 2 }, "min_p"},
		{"presence +Inf", func(r *wire.EngineCoreRequest) { r.SamplingParams.PresencePenalty = math.Inf(1) }, "presence_penalty"},
		{"frequency -3", func(r *wire.EngineCoreRequest) { r.SamplingParams.FrequencyPenalty = -3 }, "frequency_penalty"},
		{"repetition 0", func(r *wire.EngineCoreRequest) { r.SamplingParams.RepetitionPenalty = 0 }, "repetition_penalty"},
		{"max_tokens 0", func(r *wire.EngineCoreRequest) { r.SamplingParams.MaxTokens = 0 }, "max_tokens"},
		{"min over max", func(r *wire.EngineCoreRequest) { r.SamplingParams.MinTokens = 17 }, "min_tokens"},
		{"logprobs -1 is the vocabulary, above max logprobs", func(r *wire.EngineCoreRequest) { r.SamplingParams.Logprobs = &neg },
			fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: 20", model.DummyVocabSize)},
		{"logprobs -2", func(r *wire.EngineCoreRequest) { r.SamplingParams.Logprobs = ptrTo(-2) }, "logprobs must be non-negative or -1, got -2."},
		{"too many logprobs", func(r *wire.EngineCoreRequest) { r.SamplingParams.Logprobs = &big }, "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"prompt logprobs", func(r *wire.EngineCoreRequest) { r.SamplingParams.PromptLogprobs = ptrTo(20) }, ""},
		{"prompt logprobs 0", func(r *wire.EngineCoreRequest) { r.SamplingParams.PromptLogprobs = ptrTo(0) }, ""},
		{"too many prompt logprobs", func(r *wire.EngineCoreRequest) { r.SamplingParams.PromptLogprobs = &big }, "Requested prompt logprobs of 21, which is greater than max allowed: 20"},
		{"prompt logprobs -1", func(r *wire.EngineCoreRequest) { r.SamplingParams.PromptLogprobs = &neg }, "Requested prompt logprobs of"},
		{"prompt logprobs -3", func(r *wire.EngineCoreRequest) { r.SamplingParams.PromptLogprobs = ptrTo(-3) }, "prompt_logprobs must be non-negative or -1, got -3."},
		{"think tags", func(r *wire.EngineCoreRequest) {
			r.SamplingParams.ReasoningStart, r.SamplingParams.ReasoningEnd = "<think>", "</think>"
		}, ""},
		{"think start without end", func(r *wire.EngineCoreRequest) { r.SamplingParams.ReasoningStart = "<think>" }, "_tandem_reasoning_start needs _tandem_reasoning_end"},
		{"think tag of 65 bytes", func(r *wire.EngineCoreRequest) { r.SamplingParams.ReasoningEnd = strings.Repeat("x", 65) }, "at most 64 bytes"},
		{"thinking budget -1", func(r *wire.EngineCoreRequest) { r.SamplingParams.ThinkingTokenBudget = ptrTo(-1) }, "thinking_token_budget -1: want ≥ 0"},
		{"budget message of 2000 bytes", func(r *wire.EngineCoreRequest) { r.SamplingParams.ReasoningBudgetMessage = strings.Repeat("m", 2000) }, "at most 1024"},
		{"think tags with a constraint prefix", func(r *wire.EngineCoreRequest) {
			r.SamplingParams.ReasoningEnd, r.SamplingParams.ConstraintPrefix = "</think>", 1
			r.SamplingParams.StructuredOutputs = &wire.StructuredOutputs{Regex: "a"}
		}, "takes no think tags"},
		{"allowed token ids", func(r *wire.EngineCoreRequest) { r.SamplingParams.AllowedTokenIDs = []int32{1, 2} }, ""},
		{"allowed token ids empty", func(r *wire.EngineCoreRequest) { r.SamplingParams.AllowedTokenIDs = []int32{} }, "allowed_token_ids is not None and empty!"},
		{"allowed token ids out of vocab", func(r *wire.EngineCoreRequest) { r.SamplingParams.AllowedTokenIDs = []int32{1, model.DummyVocabSize} },
			"allowed_token_ids contains out-of-vocab token id!"},
		{"logprob token ids", func(r *wire.EngineCoreRequest) { r.SamplingParams.LogprobTokenIDs = []int32{3, 4} }, ""},
		{"logprob token ids out of vocab", func(r *wire.EngineCoreRequest) { r.SamplingParams.LogprobTokenIDs = []int32{-1, 3} },
			fmt.Sprintf("token_id(s) [-1] in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: %d", model.DummyVocabSize)},
		{"logprob token ids too many", func(r *wire.EngineCoreRequest) { r.SamplingParams.LogprobTokenIDs = make([]int32, 129) },
			"Requested logprob_token_ids of length 129, which is greater than max allowed: 128"},
		{"logprob token ids and another logprobs", func(r *wire.EngineCoreRequest) {
			r.SamplingParams.LogprobTokenIDs, r.SamplingParams.Logprobs = []int32{3, 4}, ptrTo(1)
		}, "When both logprobs and logprob_token_ids are set, logprobs must equal len(logprob_token_ids). Got logprobs=1, len(logprob_token_ids)=2."},
		{"negative stop id", func(r *wire.EngineCoreRequest) { r.SamplingParams.StopTokenIDs = []int32{4, -1} }, "stop_token_ids: -1"},
		{"too many stop ids", func(r *wire.EngineCoreRequest) { r.SamplingParams.StopTokenIDs = make([]int32, 1025) }, "1025 stop_token_ids"},
		{"negative eos", func(r *wire.EngineCoreRequest) { r.SamplingParams.EOSTokenID = &eos }, "_eos_token_id -3"},
		{"NaN bias", func(r *wire.EngineCoreRequest) { r.SamplingParams.LogitBias = map[int32]float64{1: math.NaN()} }, "logit_bias"},
		{"huge bias map", func(r *wire.EngineCoreRequest) {
			r.SamplingParams.LogitBias = map[int32]float64{}
			for i := range 1025 {
				r.SamplingParams.LogitBias[int32(i)] = 1
			}
		}, "1025 logit_bias entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.mod(r)
			err := validateRequest(r, model.DummyVocabSize, wire.DefaultMaxLogprobs)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestValidateMaxLogprobs checks requests against --max-logprobs: -1 lets
// a request ask for the whole vocabulary, as vLLM's max_logprobs -1.
func TestValidateMaxLogprobs(t *testing.T) {
	v := int(model.DummyVocabSize)
	tests := []struct {
		name                 string
		max                  int
		logprobs, promptLogp *int
		want                 string // "" = valid
	}{
		{"no cap: logprobs -1", -1, ptrTo(-1), nil, ""},
		{"no cap: prompt_logprobs -1", -1, nil, ptrTo(-1), ""},
		{"no cap: the vocabulary", -1, ptrTo(v), ptrTo(v), ""},
		{"no cap: past the vocabulary", -1, ptrTo(v + 1), nil, fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: %d", v+1, v)},
		{"5: logprobs 5", 5, ptrTo(5), ptrTo(5), ""},
		{"5: logprobs 6", 5, ptrTo(6), nil, "Requested sample logprobs of 6, which is greater than max allowed: 5"},
		{"5: prompt_logprobs -1", 5, nil, ptrTo(-1), fmt.Sprintf("Requested prompt logprobs of %d, which is greater than max allowed: 5", v)},
		{"0: logprobs 0", 0, ptrTo(0), ptrTo(0), ""},
		{"0: logprobs 1", 0, ptrTo(1), nil, "Requested sample logprobs of 1, which is greater than max allowed: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &wire.EngineCoreRequest{RequestID: "r", PromptTokenIDs: []int32{1, 2}, SamplingParams: wire.DefaultSamplingParams()}
			r.SamplingParams.Logprobs, r.SamplingParams.PromptLogprobs = tt.logprobs, tt.promptLogp
			err := validateRequest(r, model.DummyVocabSize, tt.max)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzEngineAdd feeds random ADDs through a real engine (the dummy model
// on the CPU backend: runner, sampler, scheduler, KV cache) and steps it:
// every request either runs to a finish or is rejected with an error
// output, and the engine never panics or wedges.
func FuzzEngineAdd(f *testing.F) {
	f.Add([]byte{1, 2, 3}, 1.0, 1.0, 0, 0.0, 4, 0, int32(-1), 0.0, false, int8(-1))
	f.Add([]byte{255, 0}, 0.0, 0.5, 3, 0.1, 2, 1, int32(5), 1.5, true, int8(3))
	f.Add([]byte{}, math.NaN(), 2.0, -5, -1.0, -1, 7, int32(1<<30), math.Inf(1), false, int8(25))
	f.Fuzz(func(t *testing.T, prompt []byte, temp, topP float64, topK int, minP float64, maxTok, minTok int, stop int32, bias float64, ignoreEOS bool, lp int8) {
		cfg, w := model.Dummy(64)
		be, err := cpu.New(cfg, w, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		e, err := NewEngine(Config{MaxModelLen: 64, BlockSize: 4, NumBlocks: 32, MaxNumSeqs: 4, MaxNumBatchedTokens: 32,
			EnablePrefixCaching: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, be)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1000, 0)
		e.Handle(now, "fe", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"})
		ids := make([]int32, len(prompt))
		for i, b := range prompt {
			ids[i] = int32(b) * 2 // a third of them past the 320-token vocab
		}
		sp := wire.DefaultSamplingParams()
		sp.Temperature, sp.TopP, sp.TopK, sp.MinP = temp, topP, topK, minP
		sp.MaxTokens, sp.MinTokens, sp.IgnoreEOS = maxTok, minTok, ignoreEOS
		sp.StopTokenIDs = []int32{stop}
		sp.LogitBias = map[int32]float64{stop: bias}
		if lp >= 0 {
			n := int(lp)
			sp.Logprobs = &n
		}
		seed := int64(len(prompt))
		sp.Seed = &seed
		outs := e.Handle(now, "fe", &wire.EngineCoreRequest{RequestID: "fuzz", PromptTokenIDs: ids, SamplingParams: sp})
		finished := rejected(outs)
		for i := 0; e.HasWork(); i++ {
			if i > 200 {
				t.Fatal("the engine still has work after 200 steps")
			}
			step, err := e.Step(context.Background(), now)
			if err != nil {
				t.Fatalf("Step: %v", err)
			}
			finished = finished || rejected(step)
		}
		if !finished {
			t.Fatal("the request neither finished nor was rejected")
		}
	})
}

// rejected reports whether outs carry a finished output.
func rejected(outs []Out) bool {
	for _, o := range outs {
		if b, ok := o.Payload.(*wire.EngineCoreOutputs); ok {
			for _, out := range b.Outputs {
				if out.FinishReason != wire.FinishNone {
					return true
				}
			}
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
