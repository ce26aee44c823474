package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Layout of the help: flag columns, then descriptions from descCol,
// wrapped before width.
const (
	descCol = 30
	width   = 80
)

// WriteHelp writes the command's help: the usage line, the summary, then
// one section per group (a flag no group lists goes under "Other").
func (c *Command) WriteHelp(w io.Writer) error {
	var b strings.Builder
	synopsis := c.Name
	if c.Positional != "" {
		if f := c.Flags.Lookup(c.Positional); f != nil {
			synopsis += " [" + placeholder(f) + "]"
		}
	}
	fmt.Fprintf(&b, "Usage: %s [flags]\n", synopsis)
	if c.Summary != "" {
		fmt.Fprintf(&b, "\n%s\n", wrap(c.Summary, 0, width))
	}
	b.WriteString("\nOptions:\n")
	row(&b, "-h, --help", "show this help and exit")
	if f := c.Flags.Lookup("config"); f != nil {
		c.flagRow(&b, f)
	}
	done := map[string]bool{"config": true}
	for _, g := range c.Groups {
		c.section(&b, g.Title, g.Flags, done)
	}
	c.section(&b, "Other", c.Ungrouped(), done)
	_, err := io.WriteString(w, b.String())
	return err
}

// section writes a group's flags that the command defines and no earlier
// section wrote; nothing when there are none.
func (c *Command) section(b *strings.Builder, title string, names []string, done map[string]bool) {
	header := false
	for _, n := range names {
		f := c.Flags.Lookup(n)
		if f == nil || done[n] {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\n%s:\n", title)
			header = true
		}
		for _, a := range c.aliases(f) {
			done[a.Name] = true
		}
		c.flagRow(b, f)
	}
}

// flagRow writes one flag (with its aliases): "-i, --input-file FILE" and
// its description with the default.
func (c *Command) flagRow(b *strings.Builder, f *flag.Flag) {
	var forms []string
	for _, a := range c.aliases(f) {
		forms = append(forms, dashed(a.Name))
	}
	head := strings.Join(forms, ", ")
	_, usage := unquote(f)
	if isBool(f) {
		if f.DefValue == "true" {
			head += ", --no-" + f.Name
		}
	} else {
		head += " " + placeholder(f)
	}
	if f.Name == c.Positional {
		usage += "; or give it as the argument"
	}
	if d := defaultText(f, usage); d != "" {
		usage += " (default: " + d + ")"
	}
	row(b, head, usage)
}

// row writes head at column 2 and desc from descCol, on the same line when
// head leaves room.
func row(b *strings.Builder, head, desc string) {
	line := "  " + head
	if n := utf8.RuneCountInString(line); n <= descCol-2 {
		b.WriteString(line + strings.Repeat(" ", descCol-n))
	} else {
		b.WriteString(line + "\n" + strings.Repeat(" ", descCol))
	}
	b.WriteString(wrap(desc, descCol, width) + "\n")
}

// wrap breaks text into lines of at most width columns, the later lines
// indented by indent (the first one is already there).
func wrap(text string, indent, width int) string {
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(text) {
		n := len([]rune(word))
		switch {
		case i == 0:
		case col+1+n > width:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// placeholder names a flag's value: the word backquoted in its usage
// (`BYTES`), DURATION for a duration, else the flag's name in capitals
// (--max-model-len MAX_MODEL_LEN), as argparse writes it.
func placeholder(f *flag.Flag) string {
	if name, _ := unquote(f); name != "" {
		return strings.ToUpper(name)
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(time.Duration); ok {
			return "DURATION"
		}
	}
	return strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}

// unquote returns the first backquoted word of f's usage and the usage
// without its backquotes. A backquoted phrase with spaces (`tandem
// keygen`) names no placeholder and keeps its quotes.
func unquote(f *flag.Flag) (name, usage string) {
	usage = f.Usage
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name = usage[i+1 : i+1+j]
	if name == "" || strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		return "", usage
	}
	return name, usage[:i] + name + usage[i+1+j+1:]
}

// defaultText is f's default as the help shows it, or "" when it is the
// zero value or the usage already says what the default is.
func defaultText(f *flag.Flag, usage string) string {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return ""
	}
	if strings.Contains(usage, "(default") {
		return ""
	}
	return f.DefValue
}
