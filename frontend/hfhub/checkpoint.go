package hfhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A checkpoint is a Transformers repository as `vllm serve OWNER/REPO`
// downloads it: config.json, the other JSON and Jinja files at the root
// (tokenizer, generation config, chat template, safetensors index) and
// the safetensors weights the loader reads, which it opens as a Hugging
// Face directory. The weights are the index's shards, else
// model.safetensors, else every *.safetensors at the root, in the order
// the loader looks for them, so a repository that also holds
// consolidated.safetensors (Mistral's layout) fetches one copy.

// indexFile is the safetensors index the loader reads first.
const indexFile = "model.safetensors.index.json"

// checkpointFiles splits a commit's files into the checkpoint's small
// files (fetched first) and its candidate weights; ErrNoCheckpoint
// without config.json and a safetensors file at the root.
func checkpointFiles(ref Ref, files []File) (meta, weights []File, err error) {
	config := false
	for _, f := range files {
		switch {
		case strings.Contains(f.Path, "/"):
		case strings.HasSuffix(f.Path, ".safetensors"):
			weights = append(weights, f)
		case strings.HasSuffix(f.Path, ".json") || strings.HasSuffix(f.Path, ".jinja"):
			meta = append(meta, f)
			config = config || f.Path == "config.json"
		}
	}
	if !config || len(weights) == 0 {
		return nil, nil, &Error{Ref: ref, Err: ErrNoCheckpoint, Msg: "want config.json and *.safetensors at the root; " + ggufs(files)}
	}
	return meta, weights, nil
}

// shards picks the weights the loader opens in dir (whose small files are
// there): the index's shards, else model.safetensors, else all of them.
// ErrNoCheckpoint when the index names a shard weights lacks.
func shards(ref Ref, dir string, weights []File) ([]File, error) {
	raw, err := os.ReadFile(filepath.Join(dir, indexFile))
	if errors.Is(err, os.ErrNotExist) {
		if i := slices.IndexFunc(weights, func(f File) bool { return f.Path == "model.safetensors" }); i >= 0 {
			return weights[i : i+1], nil
		}
		return weights, nil
	}
	if err != nil {
		return nil, &Error{Ref: ref, Err: err}
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, &Error{Ref: ref, Err: ErrNoCheckpoint, Msg: fmt.Sprintf("%s: %v", indexFile, err)}
	}
	var out []File
	for _, shard := range index.WeightMap {
		if slices.ContainsFunc(out, func(f File) bool { return f.Path == shard }) {
			continue
		}
		i := slices.IndexFunc(weights, func(f File) bool { return f.Path == shard })
		if i < 0 {
			return nil, &Error{Ref: ref, Err: ErrNoCheckpoint, Msg: indexFile + " names " + shard + ", which is not there"}
		}
		out = append(out, weights[i])
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// checkpoint is where a checkpoint of commit is in the cache: Path its
// snapshot directory, Files its small files and weights.
func (c *Client) checkpoint(ref Ref, commit string, files []File) Model {
	m := Model{Name: ref.Repo, Ref: ref, Commit: commit, Path: c.snapPath(ref.Repo, commit, ".")}
	for _, f := range files {
		m.Files = append(m.Files, c.snapPath(ref.Repo, commit, f.Path))
	}
	return m
}

// PullCheckpoint makes the checkpoint "owner/repo" available in the cache
// and says where it is (Model.Path: the snapshot directory): the small
// files first, then the weights they name. ErrNoCheckpoint if the
// repository is none (a GGUF repository: Pull it); a tag is
// ErrInvalidName. If the hub cannot be asked, a complete copy in the
// cache is used, as Pull does.
func (c *Client) PullCheckpoint(ctx context.Context, name string, progress func(Progress)) (Model, error) {
	ref, err := ParseRef(name)
	if err == nil && ref.Tag != "" {
		err = &Error{Ref: ref, Err: ErrInvalidName, Msg: "a checkpoint has no tag"}
	}
	if err != nil {
		return Model{}, err
	}
	branch, commit, err := c.commit(ctx, ref)
	var files []File
	if err == nil {
		files, err = c.tree(ctx, ref, commit)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Model{}, err
		}
		if m, lerr := c.LocalCheckpoint(name); lerr == nil {
			return m, nil
		}
		return Model{}, err
	}
	meta, weights, err := checkpointFiles(ref, files)
	if err != nil {
		return Model{}, err
	}
	plan := Plan{Ref: ref, Branch: branch, Commit: commit, Model: meta}
	if _, err := c.Download(ctx, plan, progress); err != nil {
		return Model{}, err
	}
	m := c.checkpoint(ref, commit, meta)
	if weights, err = shards(ref, m.Path, weights); err != nil {
		return Model{}, err
	}
	plan.Branch, plan.Model = "", weights
	if _, err := c.Download(ctx, plan, progress); err != nil {
		return Model{}, err
	}
	return c.checkpoint(ref, commit, append(meta, weights...)), nil
}

// LocalCheckpoint resolves the checkpoint "owner/repo" from the cache
// alone: the commit refs/ records, with config.json and every weight
// file the loader opens. ErrNotFound if the repository is not cached or
// a weight file is missing, ErrNoCheckpoint if it is no checkpoint.
func (c *Client) LocalCheckpoint(name string) (Model, error) {
	ref, err := ParseRef(name)
	if err != nil {
		return Model{}, err
	}
	commit, files := c.cachedFiles(ref.Repo)
	if len(files) == 0 {
		return Model{}, &Error{Ref: ref, Err: ErrNotFound, Msg: "not in the cache " + c.dir}
	}
	meta, weights, err := checkpointFiles(ref, files)
	if err != nil {
		return Model{}, err
	}
	m := c.checkpoint(ref, commit, meta)
	if weights, err = shards(ref, m.Path, weights); err != nil {
		if errors.Is(err, ErrNoCheckpoint) {
			err = &Error{Ref: ref, Err: ErrNotFound, Msg: "the cached copy is incomplete: " + err.Error()}
		}
		return Model{}, err
	}
	return c.checkpoint(ref, commit, append(meta, weights...)), nil
}
