package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writePhase writes a phase's report as KIND-DATE.json in o.out and, with
// o.doc set, replaces the phase's section of the doc: splice gets the
// doc's text and the JSON's path relative to it and returns the new text.
func writePhase(o options, stderr io.Writer, kind, date string, rep any, splice func(doc, rel string) string) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.out, kind+"-"+date+".json")
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", path)
	if o.doc == "" {
		return nil
	}
	rel, err := filepath.Rel(filepath.Dir(o.doc), path)
	if err != nil {
		rel = path
	}
	old, err := os.ReadFile(o.doc)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("doc: %w", err)
	}
	if err := os.WriteFile(o.doc, []byte(splice(string(old), filepath.ToSlash(rel))), 0o644); err != nil {
		return fmt.Errorf("doc: %w", err)
	}
	fmt.Fprintf(stderr, "updated %s\n", o.doc)
	return nil
}
