package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// toolFlags are vLLM's tool-calling flags, taken by serve, frontend and
// run-batch.
type toolFlags struct {
	parser  string // --tool-call-parser: a toolparse name, "" = from the chat template
	enabled bool   // --enable-auto-tool-choice
}

func (f *toolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.parser, "tool-call-parser", "", "`syntax` of the tool calls read out of tool_choice auto answers: "+
		strings.Join(toolparse.Names(), ", ")+" (default: the one the chat template describes, if any)")
	fs.BoolVar(&f.enabled, "enable-auto-tool-choice", true, "read tool calls out of tool_choice auto answers; vLLM needs this flag to, "+
		"Tandem takes it and reads calls without it (=false: auto answers stay text)")
}

// check fails on an unknown --tool-call-parser, before anything starts.
func (f *toolFlags) check() error {
	if f.parser == "" {
		return nil
	}
	if _, err := toolparse.Lookup(f.parser); err != nil {
		return fmt.Errorf("--tool-call-parser: %w", err)
	}
	return nil
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
