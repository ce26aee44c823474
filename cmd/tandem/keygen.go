package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// runKeygen is `tandem keygen`: it writes a fresh CURVE keypair for an engine or a
// frontend (security.go) as DIR/NAME.key (the secret key, mode 0600) and DIR/NAME.pub
// (the public key), each one Z85 key under a comment line, and prints the public key.
func runKeygen(_ context.Context, args []string) error {
	return keygen(args, os.Stdout)
}

func keygen(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("tandem keygen", flag.ContinueOnError)
	out := fl.String("out", "", "directory to write NAME.key and NAME.pub into (required; created if missing)")
	name := fl.String("name", "tandem", "base name of the key files, e.g. engine or frontend-0")
	force := fl.Bool("force", false, "overwrite existing key files")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	if *out == "" {
		return fmt.Errorf("keygen: --out is required")
	}
	if *name == "" || strings.ContainsAny(*name, `/\`) || strings.HasPrefix(*name, ".") {
		return fmt.Errorf("keygen: --name %q: want a plain file name", *name)
	}
	public, secret, err := zmq.NewCurveKeypair()
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	secretPath := filepath.Join(*out, *name+".key")
	publicPath := filepath.Join(*out, *name+".pub")
	files := []struct {
		path, text string
		mode       os.FileMode
	}{
		{secretPath, "# tandem CURVE secret key (Z85). Keep it private: whoever has it can act as " + *name + ".\n" + secret + "\n", 0o600},
		{publicPath, "# tandem CURVE public key (Z85) of " + *name + "\n" + public + "\n", 0o644},
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	} else {
		for _, f := range files { // check both first: never leave half a pair
			if _, err := os.Lstat(f.path); err == nil {
				return fmt.Errorf("keygen: %s exists (use --force to overwrite)", f.path)
			}
		}
	}
	for _, f := range files {
		if err := writeKey(f.path, f.text, flags, f.mode); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("keygen: %s exists (use --force to overwrite)", f.path)
			}
			return fmt.Errorf("keygen: %w", err)
		}
	}
	fmt.Fprintf(stdout, "secret key: %s\npublic key: %s\n%s\n", secretPath, publicPath, public)
	return nil
}

// writeKey writes one key file with mode; an existing file keeps its contents unless
// flags truncate, and gets mode too.
func writeKey(path, text string, flags int, mode os.FileMode) error {
	f, err := os.OpenFile(path, flags, mode)
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil { // OpenFile's mode is masked by the umask, and ignored for an existing file
		_ = f.Close()
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
