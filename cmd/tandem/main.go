// Command tandem is Tandem's single binary: `tandem serve` (engines and
// frontends as supervised processes), `tandem engine` (one engine core),
// `tandem frontend` (one API server) and the tools around them. Each
// command's flags go through cmd/tandem/internal/cli (grouped --help,
// a positional MODEL, --config FILE); docs/cli.md describes them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// command is one tandem subcommand.
type command struct {
	name    string
	args    string // synopsis after the name
	summary string
	section string // the heading it is listed under in `tandem --help`
	run     func(ctx context.Context, args []string) error
	// cli builds the command line with throwaway variables, for the tests
	// that check every command's help; nil for a command that parses its
	// flags itself.
	cli func() *cli.Command
}

// commands are tandem's subcommands, in the order `tandem --help` lists
// them.
var commands = []command{
	{"serve", "[MODEL] [flags]", "start engine cores and frontends as supervised processes", "Serving", runServe,
		func() *cli.Command { return serveCommand(new(serveFlags)) }},
	{"engine", "[MODEL] --listen ENDPOINT | --protocol vllm [flags]", "run one engine core", "Serving", runEngine,
		func() *cli.Command { return engineCommand(new(engineFlags), new(curveFlags), new(vllmEngineFlags)) }},
	{"frontend", "--engines ENDPOINT[,ENDPOINT…] [flags]", "run one API server against running engine cores", "Serving", runFrontend,
		func() *cli.Command { return frontendCommand(new(frontendFlags), new(curveFlags)) }},
	{"run-batch", "-i in.jsonl -o out.jsonl [--model M | --engines …]", "run an OpenAI batch file", "Tools", runBatch,
		func() *cli.Command { return runBatchCommand(new(engineFlags), new(runBatchFlags)) }},
	{"bench", "[--base-url URL | --serve ARGS --routing P,…]", "benchmark an OpenAI-compatible server", "Tools", runBench,
		func() *cli.Command { return benchCommand(new(benchFlags)) }},
	{"gpus", "[--json]", "list the NVIDIA GPUs this process may use", "Tools", runGPUs,
		func() *cli.Command { return gpusCommand(new(bool)) }},
	{"keygen", "--out DIR | --kubernetes-secret S [--name A,B]", "write CURVE keypairs for engine sockets", "Tools", runKeygen,
		func() *cli.Command { return keygenCommand(new(keygenFlags)) }},
	{"version", "", "print the version", "Tools", runVersion, versionCommand},
}

func main() {
	if len(os.Args) < 2 {
		writeIndex(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := dispatch(ctx, os.Args[1], os.Args[2:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp): // --help: printed, exit 0
	case errors.Is(err, errUnknownCommand):
		fmt.Fprintf(os.Stderr, "tandem: %v\n\n", err)
		writeIndex(os.Stderr)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "tandem:", err)
		os.Exit(1)
	}
}

var errUnknownCommand = errors.New("unknown command")

// dispatch runs the command name with args; `tandem help CMD` is
// `tandem CMD --help`.
func dispatch(ctx context.Context, name string, args []string) error {
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 0 {
			return dispatch(ctx, args[0], []string{"--help"})
		}
		writeIndex(os.Stdout)
		return nil
	case "--version":
		name = "version"
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args)
		}
	}
	return fmt.Errorf("%w %q", errUnknownCommand, name)
}

// writeIndex writes `tandem --help`: the commands by section.
func writeIndex(w io.Writer) {
	var b strings.Builder
	b.WriteString("tandem — an OpenAI-compatible LLM server split like vLLM v1\n\nUsage: tandem COMMAND [flags]\n")
	section := ""
	for _, c := range commands {
		if c.section != section {
			section = c.section
			fmt.Fprintf(&b, "\n%s:\n", section)
		}
		fmt.Fprintf(&b, "  %-10s %s\n  %-10s %s\n", c.name, c.summary, "", strings.TrimSpace("tandem "+c.name+" "+c.args))
	}
	b.WriteString("\nRun \"tandem COMMAND --help\" for a command's flags; docs/cli.md has them all.\n")
	_, _ = io.WriteString(w, b.String())
}

func versionCommand() *cli.Command {
	return cli.New("tandem version", "Print tandem's version.")
}

func runVersion(_ context.Context, args []string) error {
	if err := versionCommand().Parse(args); err != nil {
		return err
	}
	fmt.Println("tandem", version)
	return nil
}
