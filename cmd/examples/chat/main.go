// Command chat is a terminal chat over Tandem's Go text API: each line of
// standard input is a user turn, the answer streams back as it is
// generated, and every turn carries one session id, so the engine keeps
// the conversation's KV cache between turns (the report at the end says
// how much of the last prompt it served from cache).
//
//	go run ./cmd/examples/chat --model models/SmolLM2-135M-Instruct.Q4_1.gguf
//
// With --engine it talks to running engine cores instead of starting one
// in-process.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/inproc"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/llm"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	model := fs.String("model", "models/SmolLM2-135M-Instruct.Q4_1.gguf", `a GGUF file, a Hugging Face directory, or "dummy"`)
	engines := fs.String("engine", "", "comma-separated engine endpoints to use instead of an in-process engine")
	system := fs.String("system", "You are a helpful assistant.", "system message")
	maxTokens := fs.Int("max-tokens", 128, "tokens per answer at most")
	threads := fs.Int("threads", runtime.NumCPU(), "CPU threads of the in-process engine")
	session := fs.String("session", "chat-example", "session id of the conversation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var endpoints []string
	if *engines != "" {
		endpoints = strings.Split(*engines, ",")
	} else {
		eng, err := inproc.Start(ctx, inproc.Config{Model: *model, Threads: *threads, MaxModelLen: 2048})
		if err != nil {
			return err
		}
		defer eng.Close()
		endpoints = []string{eng.Endpoint()}
	}
	l, err := llm.Open(ctx, llm.Config{Model: *model, Engines: endpoints})
	if err != nil {
		return err
	}
	defer l.Close()

	p := llm.DefaultParams()
	p.Temperature, p.MaxTokens = 0, *maxTokens
	msgs := []tokenizer.Message{{Role: "system", Content: *system}}
	var last llm.Delta
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		msgs = append(msgs, tokenizer.Message{Role: "user", Content: lines.Text()})
		st, err := l.Chat(ctx, msgs, p, engineclient.WithSessionID(*session))
		if err != nil {
			return err
		}
		var answer strings.Builder
		for {
			d, err := st.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			fmt.Fprint(out, d.Text)
			answer.WriteString(d.Text)
			if d.Finish != "" {
				last = d
			}
		}
		fmt.Fprintln(out)
		msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: answer.String()})
	}
	if err := lines.Err(); err != nil {
		return err
	}
	fmt.Fprintf(out, "-- %d turns; last answer ended by %s; %d prompt tokens served from the session's cache\n",
		(len(msgs)-1)/2, last.Finish, last.NumCachedTokens)
	return nil
}
