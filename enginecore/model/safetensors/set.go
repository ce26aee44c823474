package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// IndexFile is the name of a sharded checkpoint's index.
const IndexFile = "model.safetensors.index.json"

// Set is a checkpoint's tensors across one or more files.
type Set struct {
	files []*File
	owner map[string]*File // tensor name → file holding it
	names []string         // sorted
}

// OpenDir opens the checkpoint in dir: the shards named by
// model.safetensors.index.json when present, else model.safetensors, else
// every *.safetensors file. A tensor may appear in only one file; with an
// index, every tensor it names must be in its shard.
func OpenDir(dir string) (*Set, error) {
	idx, err := os.ReadFile(filepath.Join(dir, IndexFile))
	switch {
	case err == nil:
		return openIndexed(dir, idx)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	paths := []string{filepath.Join(dir, "model.safetensors")}
	if _, err := os.Stat(paths[0]); err != nil {
		if paths, err = filepath.Glob(filepath.Join(dir, "*.safetensors")); err != nil || len(paths) == 0 {
			return nil, fmt.Errorf("safetensors: no %s or *.safetensors in %s", IndexFile, dir)
		}
	}
	return openFiles(paths, nil)
}

func openIndexed(dir string, idx []byte) (*Set, error) {
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(idx, &index); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, IndexFile, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("%w: %s has no weight_map", ErrFormat, IndexFile)
	}
	var shards []string
	for name, shard := range index.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("%w: %s: tensor %q in shard %q, not a file name", ErrFormat, IndexFile, name, shard)
		}
		shards = append(shards, shard)
	}
	slices.Sort(shards)
	shards = slices.Compact(shards)
	paths := make([]string, len(shards))
	for i, s := range shards {
		paths[i] = filepath.Join(dir, s)
	}
	return openFiles(paths, index.WeightMap)
}

// openFiles opens paths; weightMap, when not nil, must match the contents.
func openFiles(paths []string, weightMap map[string]string) (*Set, error) {
	s := &Set{owner: map[string]*File{}}
	for _, p := range paths {
		f, err := Open(p)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.files = append(s.files, f)
		for _, ti := range f.infos {
			if weightMap != nil && weightMap[ti.Name] != filepath.Base(p) {
				continue // not indexed here: ignored, as the reference loaders do
			}
			if _, dup := s.owner[ti.Name]; dup {
				_ = s.Close()
				return nil, fmt.Errorf("%w: tensor %q is in more than one file (again in %s)", ErrFormat, ti.Name, p)
			}
			s.owner[ti.Name] = f
			s.names = append(s.names, ti.Name)
		}
	}
	for name, shard := range weightMap {
		if _, ok := s.owner[name]; !ok {
			_ = s.Close()
			return nil, fmt.Errorf("%w: %s names tensor %q in %s, which lacks it", ErrFormat, IndexFile, name, shard)
		}
	}
	slices.Sort(s.names)
	return s, nil
}

// Names lists the tensor names, sorted.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Tensor is File.Tensor on the file holding name.
func (s *Set) Tensor(name string) (*model.Tensor, error) {
	f, ok := s.owner[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	return f.Tensor(name)
}

// Close closes every file.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
