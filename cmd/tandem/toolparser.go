package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/server"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/toolparse"
	"github.com/tandem-llm/tandem/wire"
)

// toolFlags are vLLM's tool-calling and reasoning flags, taken by
// serve, frontend and run-batch.
type toolFlags struct {
	parser       string // --tool-call-parser: a toolparse name, "" = from the chat template
	enabled      bool   // --enable-auto-tool-choice
	reasoning    string // --reasoning-parser: a reasoning name, "none", or "" = from the chat template
	budget       int    // --reasoning-budget: tokens in a think block, -1 = no limit
	message      string // --reasoning-budget-message
	effortMap    string // --reasoning-effort-map: JSON {effort: effort}
	reasoningFmt string // --reasoning-format: llama-server's

	efforts map[string]string // effortMap parsed (check)
}

func (f *toolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.parser, "tool-call-parser", "", "`syntax` of the tool calls read out of tool_choice auto answers: "+
		strings.Join(toolparse.Names(), ", ")+" (default: the one the chat template describes, if any)")
	fs.BoolVar(&f.enabled, "enable-auto-tool-choice", true, "read tool calls out of tool_choice auto answers; vLLM needs this flag to, "+
		"Tandem takes it and reads calls without it (=false: auto answers stay text)")
	fs.StringVar(&f.reasoning, "reasoning-parser", "", "`name` of the think tags split off a thinking model's answers as its reasoning: "+
		strings.Join(reasoning.Names(), ", ")+", or none (default: the tags the chat template describes, if any)")
	fs.IntVar(&f.budget, "reasoning-budget", -1, "llama-server's flag: the most `tokens` a thinking model samples in its think block, for requests "+
		"that set no budget (thinking_token_budget, reasoning_budget_tokens); then the engine writes --reasoning-budget-message and the end tag; -1: no limit")
	fs.StringVar(&f.message, "reasoning-budget-message", "", "llama-server's flag: `text` forced into the think block when its budget is spent, before the end tag")
	fs.StringVar(&f.reasoningFmt, "reasoning-format", "auto", "llama-server's flag: how chat answers return a thinking model's reasoning when the request's "+
		"reasoning_format does not say: none (left in the content), auto or deepseek (reasoning_content), deepseek-legacy (both)")
	fs.StringVar(&f.effortMap, "reasoning-effort-map", "", "vLLM's flag: a JSON object that rewrites a request's reasoning effort to one the chat template knows, "+
		`e.g. '{"medium": "low", "xhigh": "max"}'; keys among `+strings.Join(openai.ReasoningEfforts, ", "))
}

// parseEffortMap is --reasoning-effort-map, checked: nil when unset.
func parseEffortMap(flag string) (map[string]string, error) {
	if flag == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(flag), &m); err != nil {
		return nil, fmt.Errorf("--reasoning-effort-map must be a JSON object mapping reasoning efforts to strings: %w", err)
	}
	for k := range m {
		if !slices.Contains(openai.ReasoningEfforts, k) {
			return nil, fmt.Errorf("--reasoning-effort-map has unknown effort %q; keys must be one of %s", k, strings.Join(openai.ReasoningEfforts, ", "))
		}
	}
	return m, nil
}

// apply sets the server's reasoning budget, message, effort map and
// format from the flags (after check).
func (f *toolFlags) apply(c *server.Config) {
	if f.budget >= 0 {
		c.ReasoningBudget = &f.budget
	}
	c.ReasoningBudgetMsg, c.ReasoningEffortMap, c.ReasoningFormat = f.message, f.efforts, f.reasoningFmt
}

// check fails on an unknown --tool-call-parser or --reasoning-parser, or
// a bad reasoning budget, before anything starts.
func (f *toolFlags) check() error {
	if f.budget < -1 {
		return fmt.Errorf("--reasoning-budget %d: want -1 (no limit) or at least 0", f.budget)
	}
	if len(f.message) > wire.MaxReasoningBudgetMessage {
		return fmt.Errorf("--reasoning-budget-message of %d bytes: at most %d", len(f.message), wire.MaxReasoningBudgetMessage)
	}
	efforts, err := parseEffortMap(f.effortMap)
	if err != nil {
		return err
	}
	f.efforts = efforts
	if !slices.Contains(openai.ReasoningFormats, f.reasoningFmt) {
		return fmt.Errorf("--reasoning-format %q: want one of %s", f.reasoningFmt, strings.Join(openai.ReasoningFormats, ", "))
	}
	if f.reasoning != "" && f.reasoning != "none" {
		if _, err := reasoning.Lookup(f.reasoning); err != nil {
			return fmt.Errorf("--reasoning-parser: %w", err)
		}
	}
	if f.parser == "" {
		return nil
	}
	if _, err := toolparse.Lookup(f.parser); err != nil {
		return fmt.Errorf("--tool-call-parser: %w", err)
	}
	return nil
}

// reasoningFormat returns the think tags answers are split at: the
// flag's, else the ones tok's chat template describes; nil for none.
func (f *toolFlags) reasoningFormat(tok tokenizer.Tokenizer) (*reasoning.Format, error) {
	switch f.reasoning {
	case "none":
		return nil, nil
	case "":
		if t, ok := tok.ChatTemplate().(interface{ Source() string }); ok {
			if r, ok := reasoning.Detect(t.Source()); ok {
				return r, nil
			}
		}
		return nil, nil
	}
	r, err := reasoning.Lookup(f.reasoning)
	if err != nil {
		return nil, fmt.Errorf("--reasoning-parser: %w", err)
	}
	return r, nil
}

// reasoningParserName names a resolved format for the logs.
func reasoningParserName(r *reasoning.Format) string {
	if r == nil {
		return "none"
	}
	return r.Name
}

// format returns the syntax tool_choice auto answers are read in: the
// flag's, else the one tok's chat template describes; nil for none.
func (f *toolFlags) format(tok tokenizer.Tokenizer) (*toolparse.Format, error) {
	if !f.enabled {
		return nil, nil
	}
	if f.parser != "" {
		p, err := toolparse.Lookup(f.parser)
		if err != nil {
			return nil, fmt.Errorf("--tool-call-parser: %w", err)
		}
		return p, nil
	}
	if t, ok := tok.ChatTemplate().(interface{ Source() string }); ok {
		if p, ok := toolparse.Detect(t.Source()); ok {
			return p, nil
		}
	}
	return nil, nil
}

// toolParserName names a resolved format for the logs.
func toolParserName(p *toolparse.Format) string {
	if p == nil {
		return "none"
	}
	return p.Name
}
