// Package cli is the command line of one tandem subcommand, shaped after
// `vllm serve`'s habits on top of Go's flag package:
//
//   - --help and -h print the flags grouped (Model, Engine, Frontend,
//     Routing, Security, Logging, …) to stdout; Parse returns flag.ErrHelp,
//     which the caller turns into exit status 0;
//   - placeholders are meaningful (--port PORT, --kv-cache-memory BYTES:
//     a backquoted word in the usage, else DURATION for durations, else the
//     flag's name in capitals, as argparse does), never Go's "string" or
//     "int"; a default is shown when it is not the zero value;
//   - flags and positional arguments mix in any order, and one positional
//     argument may stand for a flag (`tandem serve MODEL` sets --model);
//   - --max_model_len is --max-model-len, and --no-X turns a bool X off;
//   - --config FILE reads flags from YAML (keys are flag names, with
//     dashes or underscores; lists join with commas); the command line
//     wins over the file, and an unknown key is an error.
//
// Flags stay plain flag.FlagSet registrations (fs.StringVar(&v, "name",
// def, usage)), so deploy/source_test.go can read them out of the sources.
// The package knows nothing of tandem's flags; cmd/tandem supplies the
// groups. It imports nothing of this module.
//
//	c := cli.New("tandem serve", "start engine cores and frontends",
//		cli.Group{Title: "Model", Flags: []string{"model"}})
//	c.Positional = "model"
//	c.EnableConfig()
//	fs := c.Flags
//	fs.StringVar(&model, "model", "dummy", "a GGUF file or a Hugging Face `directory`")
//	if err := c.Parse(args); err != nil { // flag.ErrHelp after --help
//		return err
//	}
package cli
