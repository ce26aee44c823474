package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
)

// Group is a titled section of a command's help and the flags it lists,
// in that order. Names the command does not define are skipped, so
// commands can share one table.
type Group struct {
	Title string
	Flags []string
}

// Command is one subcommand's command line.
type Command struct {
	Name       string        // as the user types it: "tandem serve"
	Summary    string        // one sentence under the usage line
	Positional string        // the flag a lone positional argument sets ("model"); "" for none
	Groups     []Group       // help sections; see Ungrouped
	Flags      *flag.FlagSet // register flags here
	Help       io.Writer     // where --help prints; nil for os.Stdout

	configPath string // --config, when EnableConfig registered it
}

// New returns a command with an empty flag set that reports errors
// instead of printing them.
func New(name, summary string, groups ...Group) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Name: name, Summary: summary, Groups: groups, Flags: fs}
}

// EnableConfig adds --config FILE (see ParseConfig).
func (c *Command) EnableConfig() {
	c.Flags.StringVar(&c.configPath, "config", "", "read flags from this YAML `file` (keys are flag names); flags on the command line win")
}

func (c *Command) hasConfig() bool { return c.Flags.Lookup("config") != nil }

// short is the subcommand's own name, the prefix of its errors.
func (c *Command) short() string { return c.Name[strings.LastIndexByte(c.Name, ' ')+1:] }

// Parse parses args: flags and positional arguments in any order (a lone
// "--" ends the flags), then the positional argument, then the --config
// file for every flag the command line left unset. On -h or --help it
// prints the help and returns flag.ErrHelp.
func (c *Command) Parse(args []string) error {
	pos, err := c.parseLine(args)
	if errors.Is(err, flag.ErrHelp) {
		w := c.Help
		if w == nil {
			w = os.Stdout
		}
		if err := c.WriteHelp(w); err != nil {
			return err
		}
		return flag.ErrHelp
	}
	if err != nil {
		return fmt.Errorf("%s: %w (%s --help lists the flags)", c.short(), err, c.Name)
	}
	onLine := map[string]bool{}
	c.Flags.Visit(func(f *flag.Flag) { onLine[f.Name] = true })
	if err := c.setPositional(pos, onLine); err != nil {
		return err
	}
	if c.configPath == "" {
		return nil
	}
	return c.applyConfig(c.configPath, onLine)
}

// parseLine runs the flag set over the flag part of args and returns the
// positional arguments, wherever they were.
func (c *Command) parseLine(args []string) ([]string, error) {
	line, pos := c.normalize(args)
	for len(line) > 0 {
		if err := c.Flags.Parse(line); err != nil {
			return nil, err
		}
		rest := c.Flags.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		line = rest[1:]
	}
	return pos, nil
}

// normalize rewrites args for Go's flag package: --max_model_len=1 becomes
// --max-model-len=1 and --no-X becomes --X=false for a bool flag X (when
// those name flags); values are left alone. Everything after a lone "--"
// is positional and comes back as tail, in order with the rest.
func (c *Command) normalize(args []string) (line, tail []string) {
	var after []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			after = args[i+1:]
			break
		}
		if len(a) < 2 || a[0] != '-' {
			line = append(line, a)
			continue
		}
		dashes := "-"
		if strings.HasPrefix(a, "--") {
			dashes = "--"
		}
		name, value, hasValue := strings.Cut(a[len(dashes):], "=")
		name = c.canonical(name)
		f := c.Flags.Lookup(name)
		if f == nil {
			if base, ok := strings.CutPrefix(name, "no-"); ok && !hasValue {
				if b := c.Flags.Lookup(base); b != nil && isBool(b) {
					line = append(line, dashes+base+"=false")
					continue
				}
			}
			line = append(line, a) // the flag set reports it
			continue
		}
		if hasValue {
			line = append(line, dashes+name+"="+value)
		} else {
			line = append(line, dashes+name)
			if !isBool(f) && i+1 < len(args) {
				i++
				line = append(line, args[i])
			}
		}
		// A flag whose value takes more (argparse's nargs="+", as vLLM's
		// --lora-modules a=/x b=/y) gets each following argument it
		// accepts as one more occurrence.
		if m, ok := f.Value.(interface{ TakesMore(arg string) bool }); ok {
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && m.TakesMore(args[i+1]) {
				i++
				line = append(line, dashes+name, args[i])
			}
		}
	}
	return line, after
}

// canonical is name, or name with underscores as dashes when only that
// spelling is a flag.
func (c *Command) canonical(name string) string {
	if c.Flags.Lookup(name) != nil {
		return name
	}
	d := strings.ReplaceAll(name, "_", "-")
	if c.Flags.Lookup(d) != nil {
		return d
	}
	if base, ok := strings.CutPrefix(d, "no-"); ok && c.Flags.Lookup(base) != nil {
		return d // --no_enable_prefix_caching: normalize turns it off
	}
	return name
}

// setPositional sets the Positional flag from the one positional argument.
func (c *Command) setPositional(pos []string, onLine map[string]bool) error {
	if len(pos) == 0 {
		return nil
	}
	if c.Positional == "" {
		return fmt.Errorf("%s: unexpected arguments %q (%s takes none)", c.short(), pos, c.Name)
	}
	if len(pos) > 1 {
		return fmt.Errorf("%s: unexpected arguments %q (only the %s is an argument)", c.short(), pos[1:], c.Positional)
	}
	f := c.Flags.Lookup(c.Positional)
	if onLine[f.Name] && f.Value.String() != pos[0] {
		return fmt.Errorf("%s: the %s is given twice: %q as the argument and %q with --%s", c.short(), f.Name, pos[0], f.Value.String(), f.Name)
	}
	if err := c.Flags.Set(f.Name, pos[0]); err != nil {
		return fmt.Errorf("%s: %s %q: %w", c.short(), f.Name, pos[0], err)
	}
	onLine[f.Name] = true
	return nil
}

// applyConfig sets, from the file at path, every flag the command line
// did not set (onLine, aliases included).
func (c *Command) applyConfig(path string, onLine map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: --config: %w", c.short(), err)
	}
	entries, err := ParseConfig(data)
	if err != nil {
		return fmt.Errorf("%s: --config %s: %w", c.short(), path, err)
	}
	fromFile := map[string]string{} // flag name → key that set it
	for _, e := range entries {
		name := c.canonical(e.Key)
		f := c.Flags.Lookup(name)
		switch {
		case name == "config":
			return fmt.Errorf("%s: --config %s: key %q: a config file cannot name another", c.short(), path, e.Key)
		case f == nil:
			return fmt.Errorf("%s: --config %s: unknown key %q (no such flag of %s)", c.short(), path, e.Key, c.Name)
		}
		for _, a := range c.aliases(f) {
			if prev, dup := fromFile[a.Name]; dup {
				return fmt.Errorf("%s: --config %s: keys %q and %q set the same flag", c.short(), path, prev, e.Key)
			}
			fromFile[a.Name] = e.Key
		}
		if c.anySet(f, onLine) {
			continue
		}
		if err := c.Flags.Set(name, e.Value); err != nil {
			return fmt.Errorf("%s: --config %s: %s: %w", c.short(), path, e.Key, err)
		}
	}
	return nil
}

// anySet reports whether f or one of its aliases is in set.
func (c *Command) anySet(f *flag.Flag, set map[string]bool) bool {
	for _, a := range c.aliases(f) {
		if set[a.Name] {
			return true
		}
	}
	return false
}

// aliases returns f and every other flag that sets the same variable
// (fs.StringVar(&v, "i", …) and fs.StringVar(&v, "input-file", …)), short
// names first.
func (c *Command) aliases(f *flag.Flag) []*flag.Flag {
	out := []*flag.Flag{f}
	c.Flags.VisitAll(func(g *flag.Flag) {
		if g != f && sameVar(f.Value, g.Value) {
			out = append(out, g)
		}
	})
	for i := 1; i < len(out); i++ { // stable: by length, then name
		for j := i; j > 0 && less(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func less(a, b *flag.Flag) bool {
	if len(a.Name) != len(b.Name) {
		return len(a.Name) < len(b.Name)
	}
	return a.Name < b.Name
}

// sameVar reports whether two flag values point at the same variable.
func sameVar(a, b flag.Value) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || ta.Kind() != reflect.Pointer {
		return false
	}
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Ungrouped returns the flags no group lists (--config aside), sorted; a
// test asserts it is empty for every command.
func (c *Command) Ungrouped() []string {
	listed := map[string]bool{"config": c.hasConfig()}
	for _, g := range c.Groups {
		for _, n := range g.Flags {
			listed[n] = true
		}
	}
	var out []string
	c.Flags.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			out = append(out, f.Name)
		}
	})
	return out
}
