// Command tandem is Tandem's single binary: `tandem serve` (engines and
// frontends as supervised processes), `tandem engine` (one engine core),
// `tandem frontend` (one API server) and `tandem version`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

const usage = `tandem — an OpenAI-compatible LLM server split like vLLM v1

Usage:
  tandem serve    --model M [flags]   start engine cores and frontends, supervised
  tandem engine   --model M --listen ENDPOINT [flags]   run one engine core
  tandem frontend --engines ENDPOINT[,ENDPOINT…] [flags] run one API server
  tandem run-batch -i in.jsonl -o out.jsonl [--model M | --engines …]   run an OpenAI batch file
  tandem gpus     [--json]            list the NVIDIA GPUs this process may use
  tandem bench    --dataset multi-turn [--base-url URL | --serve ARGS --routing P,…]   benchmark a server
  tandem keygen   --out DIR [--name NAME]   write a CURVE keypair for engine sockets
  tandem version

Run "tandem <command> --help" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = runServe(ctx, args)
	case "engine":
		err = runEngine(ctx, args)
	case "frontend":
		err = runFrontend(ctx, args)
	case "run-batch":
		err = runBatch(ctx, args)
	case "keygen":
		err = runKeygen(ctx, args)
	case "gpus":
		err = runGPUs(ctx, args)
	case "bench":
		err = runBench(ctx, args)
	case "version", "--version":
		fmt.Println("tandem", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "tandem: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tandem:", err)
		os.Exit(1)
	}
}
