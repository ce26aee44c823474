package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/kubesecret"
)

// curveGenerationAnnotation records on a Secret written by `tandem keygen
// --kubernetes-secret` the --generation its keys belong to.
const curveGenerationAnnotation = "tandem.dev/curve-generation"

// keygenSecret is `tandem keygen --kubernetes-secret S`: it keeps the Secret S
// when it already holds a matching keypair for every name at this
// generation (so re-running the hook on every upgrade changes nothing), and
// otherwise writes fresh keypairs into it. Writes are conditional
// (create, or update at the resourceVersion read), so two keygens racing
// (two upgrades at once) cannot leave keys from both: the loser re-reads and
// keeps the winner's.
func keygenSecret(ctx context.Context, f keygenFlags, names []string, stdout io.Writer) error {
	labels, err := parseLabels(f.labels)
	if err != nil {
		return err
	}
	c, err := kubesecret.InCluster(f.saDir)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	for attempt := 0; ; attempt++ {
		cur, err := c.Get(ctx, f.secret)
		if err != nil && !errors.Is(err, kubesecret.ErrNotFound) {
			return fmt.Errorf("keygen: reading Secret %s/%s: %w", c.Namespace, f.secret, err)
		}
		var why string
		if cur != nil {
			if why = staleCurveSecret(cur, names, f.generation); why == "" {
				printSecretKeys(stdout, "kept", c.Namespace, cur, names)
				return nil
			}
		}
		next, err := freshCurveSecret(f.secret, names, f.generation, labels)
		if err != nil {
			return err
		}
		verb := "created"
		if cur == nil {
			_, err = c.Create(ctx, next)
		} else {
			verb = "replaced (" + why + ")"
			next.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
			_, err = c.Update(ctx, next)
		}
		if errors.Is(err, kubesecret.ErrConflict) && attempt < 3 {
			continue // someone else wrote it meanwhile: read theirs
		}
		if err != nil {
			return fmt.Errorf("keygen: writing Secret %s/%s: %w", c.Namespace, f.secret, err)
		}
		printSecretKeys(stdout, verb, c.Namespace, next, names)
		return nil
	}
}

// staleCurveSecret says why s cannot be kept for names at generation: ""
// when it holds a valid, matching NAME.key and NAME.pub for every name and
// carries that generation.
func staleCurveSecret(s *kubesecret.Secret, names []string, generation string) string {
	if g := s.Metadata.Annotations[curveGenerationAnnotation]; g != generation {
		return fmt.Sprintf("generation %q, want %q", g, generation)
	}
	for _, n := range names {
		secret, err := oneKey(n+".key", s.Data[n+".key"])
		if err != nil {
			return err.Error()
		}
		public, err := oneKey(n+".pub", s.Data[n+".pub"])
		if err != nil {
			return err.Error()
		}
		if err := matchingPair(secret, public); err != nil {
			return n + ": " + err.Error()
		}
	}
	return ""
}

// oneKey reads the single Z85 key of a key file's text.
func oneKey(name string, text []byte) (string, error) {
	if text == nil {
		return "", fmt.Errorf("no %s", name)
	}
	keys, err := parseKeys(name, text)
	if err != nil {
		return "", err
	}
	if len(keys) != 1 {
		return "", fmt.Errorf("%s: %d keys, want 1", name, len(keys))
	}
	return keys[0], nil
}

// freshCurveSecret is the Secret name holding new keypairs for names.
func freshCurveSecret(name string, names []string, generation string, labels map[string]string) (*kubesecret.Secret, error) {
	s := &kubesecret.Secret{
		Metadata: kubesecret.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{curveGenerationAnnotation: generation},
		},
		Type: "Opaque",
		Data: map[string][]byte{},
	}
	for _, n := range names {
		secretText, publicText, _, err := keyFiles(n)
		if err != nil {
			return nil, err
		}
		s.Data[n+".key"], s.Data[n+".pub"] = []byte(secretText), []byte(publicText)
	}
	return s, nil
}

func printSecretKeys(w io.Writer, verb, namespace string, s *kubesecret.Secret, names []string) {
	fmt.Fprintf(w, "Secret %s/%s %s (generation %s)\n", namespace, s.Metadata.Name, verb, s.Metadata.Annotations[curveGenerationAnnotation])
	for _, n := range names {
		public, _ := oneKey(n+".pub", s.Data[n+".pub"])
		fmt.Fprintf(w, "%s.pub: %s\n", n, public)
	}
}

// parseLabels reads --labels k=v,k=v.
func parseLabels(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("keygen: --labels %q: want k=v,…", s)
		}
		out[k] = v
	}
	return out, nil
}
