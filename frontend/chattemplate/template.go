package chattemplate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

var (
	// ErrParse is returned by New for a template that does not parse.
	ErrParse = errors.New("chattemplate: cannot parse template")
	// ErrTemplate wraps every render failure: raise_exception, a type error,
	// a missing filter, and so on. It wraps tokenizer.ErrTemplate, so that
	// callers of tokenizer.Template need to know only that one.
	ErrTemplate = fmt.Errorf("chattemplate: %w", tokenizer.ErrTemplate)
	// ErrNoMessages is returned for an empty message list; it wraps
	// ErrTemplate.
	ErrNoMessages = fmt.Errorf("%w: no messages", ErrTemplate)
)

// RaiseError is the error of a template that called raise_exception(msg),
// as chat templates do for conversations they cannot render (roles that do
// not alternate, an unsupported role). It wraps ErrTemplate.
type RaiseError struct {
	Message string
}

func (e *RaiseError) Error() string { return "chattemplate: raise_exception: " + e.Message }

// Unwrap makes errors.Is(err, ErrTemplate) hold.
func (e *RaiseError) Unwrap() error { return ErrTemplate }

// Options are the values a template reads besides messages and kwargs.
type Options struct {
	// BOSToken and EOSToken are bos_token and eos_token; an empty one is
	// left undefined, as transformers leaves a token the model lacks.
	BOSToken string
	EOSToken string
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
}

// Template is a parsed chat template. It is immutable and safe for
// concurrent Render calls.
type Template struct {
	tpl    *exec.Template
	opts   Options
	source string
}

var _ tokenizer.Template = (*Template)(nil)

// maxNesting is the deepest bracket nesting a template may have. Real chat
// templates nest a few levels.
const maxNesting = 16

// templateName is the name the one template source is loaded under.
const templateName = "chat_template"

// New parses source, a Jinja chat template as found in a GGUF's
// tokenizer.chat_template or a tokenizer_config.json's chat_template.
func New(source string, opts Options) (*Template, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	env, err := newEnvironment(opts.Now)
	if err != nil {
		return nil, err
	}
	rewritten, depth := rewriteTernaries(preprocess(source))
	if depth > maxNesting {
		// gonja's parser takes time exponential in the nesting of calls.
		return nil, fmt.Errorf("%w: brackets nested %d deep, more than %d", ErrParse, depth, maxNesting)
	}
	loader := &sourceLoader{name: templateName, source: rewritten}
	tpl, err := parse(loader, env)
	if err != nil {
		return nil, err
	}
	return &Template{tpl: tpl, opts: opts, source: source}, nil
}

// Source returns the template's text as given to New (the server reads
// from it which tool-call syntax the model writes).
func (t *Template) Source() string { return t.source }

// parse runs gonja's parser, which panics on some malformed input, and
// turns its panics into errors.
func parse(loader *sourceLoader, env *exec.Environment) (tpl *exec.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			tpl, err = nil, fmt.Errorf("%w: %v", ErrParse, r)
		}
	}()
	tpl, err = exec.NewTemplate(templateName, engineConfig(), loader, env)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrParse, trimSource(err.Error(), loader.source))
	}
	return tpl, nil
}

// trimSource drops the whole template source that gonja quotes in its parse
// errors.
func trimSource(msg, source string) string {
	if source != "" {
		msg = strings.ReplaceAll(msg, "'"+source+"'", "template")
	}
	return msg
}

// Render renders plain text messages. It implements tokenizer.Template.
func (t *Template) Render(msgs []tokenizer.Message, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	objs := make([]Object, len(msgs))
	for i, m := range msgs {
		objs[i] = messageObject(m)
	}
	return t.RenderMessages(objs, addGenerationPrompt, kwargs)
}

// RenderMessages renders messages with any fields (tool_calls, tool_call_id,
// name, reasoning_content, content as a list of parts, ...), in member
// order. The template sees messages, add_generation_prompt, bos_token and
// eos_token (when set), tools and documents (None unless in kwargs), and
// every kwargs key (chat_template_kwargs such as enable_thinking). kwargs
// values may be Object, json.RawMessage, maps, slices, scalars or any value
// that encodes to JSON; maps have no order and are sorted by key.
//
// As with transformers, the output is not trimmed. A raise_exception in the
// template returns a *RaiseError; any other failure wraps ErrTemplate.
func (t *Template) RenderMessages(msgs []Object, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	out, err := t.render(msgs, addGenerationPrompt, kwargs)
	var raise *RaiseError
	if err == nil || errors.As(err, &raise) {
		return out, err
	}
	// Templates such as Qwen3's call string methods on every assistant
	// message's content, which fail on the null content of a turn that
	// only calls tools; give those turns "" and render again, as minja
	// does for templates it finds need non-null content.
	if retry, ok := emptyNullContent(msgs); ok {
		if out, err2 := t.render(retry, addGenerationPrompt, kwargs); err2 == nil {
			return out, nil
		}
	}
	return "", err
}

// emptyNullContent is msgs with "" for every null or missing content of an
// assistant message; ok is false when there is none.
func emptyNullContent(msgs []Object) ([]Object, bool) {
	var out []Object
	for i, m := range msgs {
		if role, _ := m.Get("role"); role != "assistant" {
			continue
		}
		c, has := m.Get("content")
		if has && c != nil {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		fixed := slices.Clone(m)
		if j := slices.IndexFunc(fixed, func(mem Member) bool { return mem.Key == "content" }); j >= 0 {
			fixed[j].Value = ""
		} else {
			fixed = append(fixed, Member{Key: "content", Value: ""})
		}
		out[i] = fixed
	}
	return out, out != nil
}

func (t *Template) render(msgs []Object, addGenerationPrompt bool, kwargs map[string]any) (out string, err error) {
	if len(msgs) == 0 {
		return "", ErrNoMessages
	}
	messages := make(list, len(msgs))
	for i, m := range msgs {
		v, err := toTemplate(m)
		if err != nil {
			return "", fmt.Errorf("%w: messages[%d]: %w", ErrTemplate, i, err)
		}
		messages[i] = v
	}
	raise := &raiseState{}
	data := map[string]any{
		"messages":              messages,
		"add_generation_prompt": addGenerationPrompt,
		"tools":                 nil,
		"documents":             nil,
		"raise_exception":       raise.raise,
	}
	// Today's date as Llama 3.x's templates read it (date_string, else
	// "26 Jul 2024") and firefunction's (datetime), as llama.cpp passes
	// them; kwargs override.
	now := time.Now
	if t.opts.Now != nil {
		now = t.opts.Now
	}
	today := now().UTC()
	data["date_string"] = strftime(today, "%d %b %Y")
	data["datetime"] = strftime(today, "%b %d %Y %H:%M:%S GMT")
	if t.opts.BOSToken != "" {
		data["bos_token"] = t.opts.BOSToken
	}
	if t.opts.EOSToken != "" {
		data["eos_token"] = t.opts.EOSToken
	}
	for k, v := range kwargs {
		cv, err := toTemplate(v)
		if err != nil {
			return "", fmt.Errorf("%w: kwargs[%q]: %w", ErrTemplate, k, err)
		}
		data[k] = cv
	}

	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: %v", ErrTemplate, r)
		}
	}()
	out, err = t.tpl.ExecuteToString(exec.NewContext(data))
	if err != nil {
		if raise.raised {
			return "", &RaiseError{Message: raise.message}
		}
		return "", fmt.Errorf("%w: %s", ErrTemplate, trimSource(err.Error(), ""))
	}
	return out, nil
}
