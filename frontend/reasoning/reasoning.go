package reasoning

import (
	"fmt"
	"strings"
)

// Format is a model's think tags.
type Format struct {
	Name       string
	Start, End string
	// Opened: the model writes no start tag, its answer starts inside the
	// block (MiniMax-M2's, Step3's), unless the prompt closed it.
	Opened bool
	// Special: the tags are special tokens (Mistral's [THINK]), which a
	// frontend must keep in the text it splits (skip_special_tokens
	// false unless the request says).
	Special bool
	// Harmony: the answer is OpenAI's harmony messages (gpt-oss,
	// harmony.go), split by channel rather than by tags; Start and End
	// are what the engine follows for a constraint or a budget.
	Harmony bool
}

// formats are vLLM's reasoning parsers by name: most models write
// <think> … </think>; Seed-OSS writes <seed:think> … </seed:think>, and
// Mistral's (Magistral) the special tokens [THINK] … [/THINK].
var formats = []*Format{
	{Name: "deepseek_r1", Start: "<think>", End: "</think>"},
	{Name: "qwen3", Start: "<think>", End: "</think>"},
	{Name: "deepseek_v3", Start: "<think>", End: "</think>"},
	{Name: "ernie45", Start: "<think>", End: "</think>"},
	{Name: "glm45", Start: "<think>", End: "</think>"},
	{Name: "glm47", Start: "<think>", End: "</think>"},
	{Name: "kimi_k2", Start: "<think>", End: "</think>"},
	{Name: "olmo3", Start: "<think>", End: "</think>"},
	{Name: "poolside_v1", Start: "<think>", End: "</think>"},
	{Name: "step5", Start: "<think>", End: "</think>"},
	{Name: "minimax_m2", Start: "<think>", End: "</think>", Opened: true},
	{Name: "step3", Start: "<think>", End: "</think>", Opened: true},
	{Name: "seed_oss", Start: "<seed:think>", End: "</seed:think>"},
	{Name: "mistral", Start: "[THINK]", End: "[/THINK]", Special: true},
	// gpt-oss: the analysis channel is the reasoning, the final one the
	// answer (harmony.go); the answer starts in a message's header.
	{Name: "openai_gptoss", Start: "<|channel|>analysis<|message|>", End: "<|end|><|start|>assistant<|channel|>final<|message|>",
		Opened: true, Special: true, Harmony: true},
}

// Names lists the formats' names (--reasoning-parser's values).
func Names() []string {
	var out []string
	for _, f := range formats {
		out = append(out, f.Name)
	}
	return out
}

// Lookup returns the named format.
func Lookup(name string) (*Format, error) {
	for _, f := range formats {
		if f.Name == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown reasoning parser %q (one of %s)", name, strings.Join(Names(), ", "))
}

// Detect returns the format a chat template describes: one that writes
// or strips the think tags (a thinking model's), else ok false.
func Detect(template string) (f *Format, ok bool) {
	switch {
	case strings.Contains(template, "<|channel|>"):
		return mustLookup("openai_gptoss"), true
	case strings.Contains(template, "[/THINK]"):
		return mustLookup("mistral"), true
	case strings.Contains(template, "</seed:think>"):
		return mustLookup("seed_oss"), true
	case strings.Contains(template, "</think>"):
		return mustLookup("qwen3"), true
	}
	return nil, false
}

func mustLookup(name string) *Format {
	f, err := Lookup(name)
	if err != nil {
		panic(err) // the names above are formats'
	}
	return f
}

// OpensInPrompt reports whether a rendered prompt ends inside the think
// block (the template wrote the start tag as the answer's beginning, as
// DeepSeek-R1's and Qwen3's thinking variants do, or the model writes no
// start tag and the prompt did not close the block), so that the answer
// starts as reasoning.
func (f *Format) OpensInPrompt(prompt string) bool {
	if f.Opened {
		return !f.ClosedInPrompt(prompt)
	}
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), f.Start)
}

// ClosedInPrompt reports whether a rendered prompt ends just after the
// think block's end tag: the template closed the block itself (Qwen3's
// with enable_thinking false writes an empty one), so the answer is all
// content.
func (f *Format) ClosedInPrompt(prompt string) bool {
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), f.End)
}

type state int

const (
	atStart   state = iota // before the answer's first non-blank text: it may open the think block
	thinking               // inside the think block
	afterEnd               // just past the end tag: blanks before the content are dropped
	answering              // the content
)

const blanks = " \t\r\n"

// Splitter splits one answer as it comes.
type Splitter struct {
	h       *harmony // a harmony answer's split, instead of the tags'
	f       *Format
	state   state
	held    string // text that may begin a tag (or blanks before one), not yet given out
	emitted bool   // some reasoning is out (its leading blanks are dropped until then)
}

// New returns a Splitter for an answer; open: the prompt opened the think
// block (OpensInPrompt).
func (f *Format) New(open bool) *Splitter {
	s := &Splitter{f: f}
	if f.Harmony {
		s.h = &harmony{}
		return s
	}
	if open {
		s.state = thinking
	}
	return s
}

// Push takes the next text and returns the reasoning and content it
// completes. Blanks around the reasoning and between it and the content
// are dropped, as llama-server gives them; an answer that does not open
// a think block is all content, unchanged.
func (s *Splitter) Push(text string) (reasoning, content string) {
	var r, c strings.Builder
	if s.h != nil {
		s.h.push(text, &r, &c)
		return r.String(), c.String()
	}
	rest := s.held + text
	s.held = ""
	for rest != "" {
		switch s.state {
		case atStart:
			trimmed := strings.TrimLeft(rest, blanks)
			switch {
			case trimmed == "", strings.HasPrefix(s.f.Start, trimmed): // blanks, or a tag's beginning: wait
				s.held = rest
				return r.String(), c.String()
			case strings.HasPrefix(trimmed, s.f.Start):
				rest = trimmed[len(s.f.Start):]
				s.state = thinking
			default:
				s.state = answering
			}
		case thinking:
			if !s.emitted {
				if rest = strings.TrimLeft(rest, blanks); rest == "" {
					break
				}
			}
			if i := strings.Index(rest, s.f.End); i >= 0 {
				s.reason(&r, strings.TrimRight(rest[:i], blanks))
				rest = rest[i+len(s.f.End):]
				s.state = afterEnd
				continue
			}
			keep := heldTail(rest, s.f.End)
			s.reason(&r, rest[:len(rest)-len(keep)])
			s.held, rest = keep, ""
		case afterEnd:
			if rest = strings.TrimLeft(rest, blanks); rest != "" {
				s.state = answering
			}
		case answering:
			c.WriteString(rest)
			rest = ""
		}
	}
	return r.String(), c.String()
}

func (s *Splitter) reason(r *strings.Builder, text string) {
	r.WriteString(text)
	s.emitted = s.emitted || text != ""
}

// Finish returns what is held at the answer's end: in an unfinished
// think block (cut by max_tokens) it is reasoning, before any text
// content.
func (s *Splitter) Finish() (reasoning, content string) {
	if s.h != nil {
		var r, c strings.Builder
		s.h.finish(&r, &c)
		return r.String(), c.String()
	}
	held := s.held
	s.held = ""
	switch s.state {
	case thinking:
		if !s.emitted {
			held = strings.TrimLeft(held, blanks)
		}
		return strings.TrimRight(held, blanks), ""
	case atStart:
		return "", held
	}
	return "", ""
}

// heldTail is the end of text that may be the start of tag, with the
// blanks before it (dropped if the tag follows): what must wait for more
// text.
func heldTail(text, tag string) string {
	start := len(text)
	for n := min(len(tag)-1, len(text)); n > 0; n-- {
		if strings.HasSuffix(text, tag[:n]) {
			start = len(text) - n
			break
		}
	}
	for start > 0 && strings.IndexByte(blanks, text[start-1]) >= 0 {
		start--
	}
	return text[start:]
}

// Next is Push, and for the answer's last piece Finish too.
func (s *Splitter) Next(text string, last bool) (reasoning, content string) {
	r, c := s.Push(text)
	if last {
		fr, fc := s.Finish()
		r, c = r+fr, c+fc
	}
	return r, c
}

// Split splits a whole answer (open as in New).
func (f *Format) Split(answer string, open bool) (reasoning, content string) {
	return f.New(open).Next(answer, true)
}
