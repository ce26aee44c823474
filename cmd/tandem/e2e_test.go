package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestServe starts `tandem serve` as a user would and talks to it with the
// real OpenAI Go SDK.
func TestServe(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "1024", "--kv-cache-memory", "64Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := ctxTimeout(t, 60*time.Second)

	t.Run("engine is a separate process", func(t *testing.T) {
		kids := childrenOf(t, p.cmd.Process.Pid)
		var roles []string
		for _, args := range kids {
			if len(args) > 1 {
				roles = append(roles, args[1])
			}
		}
		if !contains(roles, "engine") || !contains(roles, "frontend") {
			t.Fatalf("children of tandem serve: %v, want an engine and a frontend process", roles)
		}
	})

	t.Run("chat", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:     "dummy",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the capital of France?")},
			MaxTokens: openai.Int(8),
		}, option.WithJSONSet("ignore_eos", true))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].FinishReason != "length" {
			t.Fatalf("choices = %+v, want one choice finished by length", resp.Choices)
		}
		if resp.Usage.CompletionTokens != 8 || resp.Usage.PromptTokens == 0 {
			t.Fatalf("usage = %+v, want 8 completion tokens", resp.Usage)
		}
		if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Model != "dummy" {
			t.Fatalf("id %q model %q", resp.ID, resp.Model)
		}
	})

	t.Run("chat streaming with usage", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "dummy",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			MaxTokens:     openai.Int(6),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}, option.WithJSONSet("ignore_eos", true))
		acc := openai.ChatCompletionAccumulator{}
		var chunks, usageChunks int
		for stream.Next() {
			ch := stream.Current()
			acc.AddChunk(ch)
			chunks++
			if len(ch.Choices) == 0 && ch.Usage.TotalTokens > 0 {
				usageChunks++
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if usageChunks != 1 || acc.Usage.CompletionTokens != 6 {
			t.Fatalf("usage chunks %d, usage %+v; want one usage chunk with 6 completion tokens", usageChunks, acc.Usage)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "length" {
			t.Fatalf("accumulated %+v", acc.Choices)
		}
	})

	t.Run("completions", func(t *testing.T) {
		resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:     "dummy",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(5),
		}, option.WithJSONSet("ignore_eos", true))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Usage.CompletionTokens != 5 {
			t.Fatalf("completion %+v", resp)
		}
	})

	t.Run("models", func(t *testing.T) {
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 1 || page.Data[0].ID != "dummy" {
			t.Fatalf("models %+v", page.Data)
		}
	})

	t.Run("unknown model is 404", func(t *testing.T) {
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "no-such-model",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		var apiErr *openai.Error
		if !asAPIError(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
			t.Fatalf("err = %v, want a 404 API error", err)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{
			`vllm:num_requests_running{engine="0",model_name="dummy"} 0`,
			`vllm:generation_tokens_total{engine="0",model_name="dummy"} 19`,
			`vllm:request_success_total{engine="0",finished_reason="length",model_name="dummy"} 3`,
			`tandem:engine_up{engine="0",model_name="dummy"} 1`,
			`vllm:time_to_first_token_seconds_count{engine="0",model_name="dummy"} 3`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})

	t.Run("SIGTERM stops every process", func(t *testing.T) {
		kids := childrenOf(t, p.cmd.Process.Pid)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			t.Fatal("tandem serve did not exit within 15 s of SIGTERM")
		}
		for pid := range kids {
			if alive(pid) {
				t.Errorf("child %d still alive after serve exited", pid)
			}
		}
	})
}

// childrenOf returns pid → argv of the direct children of pid.
func childrenOf(t *testing.T, parent int) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != parent {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	}
	return out
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func asAPIError(err error, target **openai.Error) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*openai.Error)
	if ok {
		*target = e
	}
	return ok
}

var _ = context.Background
