package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
	"github.com/tandem-llm/tandem/cmd/tandem/internal/kubesecret"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// runKeygen is `tandem keygen`: it makes fresh CURVE keypairs for engines and
// frontends (security.go), one per --name, and writes each as NAME.key (the
// secret key) and NAME.pub (the public key), one Z85 key under a comment line:
//
//   - into a directory (--out DIR; the secret key mode 0600), or
//   - into a Kubernetes Secret (--kubernetes-secret NAME; keygen_kube.go), with
//     the same file names as data keys, which is what the Helm chart's
//     pre-install hook does.
//
// It prints the public keys.
func runKeygen(ctx context.Context, args []string) error {
	return keygenWith(ctx, args, os.Stdout)
}

// keygen is runKeygen without a context, for tests of the directory mode.
func keygen(args []string, stdout io.Writer) error {
	return keygenWith(context.Background(), args, stdout)
}

// keygenFlags are `tandem keygen`'s flags.
type keygenFlags struct {
	out          string
	names        string
	force        bool
	keepExisting bool
	secret       string // --kubernetes-secret
	generation   string
	labels       string
	saDir        string
}

// keygenCommand is `tandem keygen`'s command line.
func keygenCommand(f *keygenFlags) *cli.Command {
	c := cli.New("tandem keygen", "Write CURVE keypairs for engine sockets, one per --name, as NAME.key "+
		"(secret) and NAME.pub (public) into a directory or a Kubernetes Secret, and print the public keys.",
		cli.Group{Title: "Keys", Flags: []string{"out", "name", "force", "keep-existing"}},
		cli.Group{Title: "Kubernetes", Flags: []string{"kubernetes-secret", "generation", "labels", "service-account-dir"}})
	fl := c.Flags
	fl.StringVar(&f.out, "out", "", "`directory` to write NAME.key and NAME.pub into (created if missing)")
	fl.StringVar(&f.names, "name", "tandem", "base `names` of the keypairs, comma-separated, e.g. engine,frontend")
	fl.BoolVar(&f.force, "force", false, "overwrite existing key files")
	fl.BoolVar(&f.keepExisting, "keep-existing", false, "keep a keypair whose two files exist (and match) instead of refusing; make the rest")
	fl.StringVar(&f.secret, "kubernetes-secret", "", "write the keypairs into this Kubernetes `Secret` (NAME.key and NAME.pub data keys) with the pod's service account, instead of --out")
	fl.StringVar(&f.generation, "generation", "1", "with --kubernetes-secret: the key `generation`; a Secret holding every keypair of this generation is kept, any other is replaced with fresh keys (rotation)")
	fl.StringVar(&f.labels, "labels", "", "with --kubernetes-secret: `k=v,…` labels for the Secret")
	fl.StringVar(&f.saDir, "service-account-dir", kubesecret.ServiceAccountDir, "with --kubernetes-secret: the service account `directory` (token, ca.crt, namespace)")
	return c
}

func keygenWith(ctx context.Context, args []string, stdout io.Writer) error {
	var f keygenFlags
	if err := keygenCommand(&f).Parse(args); err != nil {
		return err
	}
	names, err := keyNames(f.names)
	if err != nil {
		return err
	}
	switch {
	case f.out != "" && f.secret != "":
		return fmt.Errorf("keygen: --out and --kubernetes-secret: give one")
	case f.secret != "":
		return keygenSecret(ctx, f, names, stdout)
	case f.out == "":
		return fmt.Errorf("keygen: --out (a directory) or --kubernetes-secret (a Secret) is required")
	case f.force && f.keepExisting:
		return fmt.Errorf("keygen: --force and --keep-existing contradict each other")
	}
	for _, n := range names {
		if err := keygenDir(f, n, stdout); err != nil {
			return err
		}
	}
	return nil
}

// keyNames splits --name, rejecting names that are not plain file names.
func keyNames(list string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || strings.ContainsAny(n, `/\`) || strings.HasPrefix(n, ".") {
			return nil, fmt.Errorf("keygen: --name %q: want plain file names", list)
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, nil
}

// keyFiles are the two files of a fresh keypair named name.
func keyFiles(name string) (secretText, publicText, public string, err error) {
	public, secret, err := zmq.NewCurveKeypair()
	if err != nil {
		return "", "", "", fmt.Errorf("keygen: %w", err)
	}
	return "# tandem CURVE secret key (Z85). Keep it private: whoever has it can act as " + name + ".\n" + secret + "\n",
		"# tandem CURVE public key (Z85) of " + name + "\n" + public + "\n", public, nil
}

// keygenDir writes the keypair name into f.out.
func keygenDir(f keygenFlags, name string, stdout io.Writer) error {
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	secretPath := filepath.Join(f.out, name+".key")
	publicPath := filepath.Join(f.out, name+".pub")
	if f.keepExisting {
		public, err := existingPair(secretPath, publicPath)
		if err == nil {
			fmt.Fprintf(stdout, "kept: %s, %s\n%s\n", secretPath, publicPath, public)
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keygen: --keep-existing: %w", err)
		}
	}
	secretText, publicText, public, err := keyFiles(name)
	if err != nil {
		return err
	}
	files := []struct {
		path, text string
		mode       os.FileMode
	}{
		{secretPath, secretText, 0o600},
		{publicPath, publicText, 0o644},
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if f.force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	} else {
		for _, fl := range files { // check both first: never leave half a pair
			if _, err := os.Lstat(fl.path); err == nil {
				return fmt.Errorf("keygen: %s exists (use --force to overwrite, --keep-existing to keep)", fl.path)
			}
		}
	}
	for _, fl := range files {
		if err := writeKey(fl.path, fl.text, flags, fl.mode); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("keygen: %s exists (use --force to overwrite, --keep-existing to keep)", fl.path)
			}
			return fmt.Errorf("keygen: %w", err)
		}
	}
	fmt.Fprintf(stdout, "secret key: %s\npublic key: %s\n%s\n", secretPath, publicPath, public)
	return nil
}

// existingPair returns the public key of the keypair in secretPath and
// publicPath; fs.ErrNotExist when neither file exists, another error for
// half a pair or keys that do not match.
func existingPair(secretPath, publicPath string) (string, error) {
	_, serr := os.Lstat(secretPath)
	_, perr := os.Lstat(publicPath)
	if errors.Is(serr, fs.ErrNotExist) && errors.Is(perr, fs.ErrNotExist) {
		return "", fs.ErrNotExist
	}
	secret, err := readKeyFile(secretPath)
	if err != nil {
		return "", err
	}
	public, err := readKeyFile(publicPath)
	if err != nil {
		return "", err
	}
	if err := matchingPair(secret, public); err != nil {
		return "", fmt.Errorf("%s and %s: %w", secretPath, publicPath, err)
	}
	return public, nil
}

// matchingPair checks that public is secret's public key.
func matchingPair(secret, public string) error {
	derived, err := zmq.CurvePublic(secret)
	if err != nil {
		return err
	}
	if derived != public {
		return errors.New("the public key is not the secret key's")
	}
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
