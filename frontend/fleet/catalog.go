package fleet

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/frontend/hfhub"
)

// Spec is one model the router can serve.
type Spec struct {
	Name    string
	Source  string   // "preset", "models_dir" or "cache", as llama-server says
	Path    string   // the GGUF file ("dummy" for Tandem's random model); "" = unresolved
	Aliases []string // other names that resolve to it
	Options []Option // the preset's options, in file order (global ones first)
	Hidden  bool     // a cache entry a preset deduplicates: usable, not listed
	Startup bool     // load-on-startup
}

// Option is one key = value line of a preset.
type Option struct{ Key, Value string }

// Option returns the value of key (the last one set), and whether it is set.
func (s Spec) Option(key string) (string, bool) { return s.option(key) }

// option is Option for a key spelled several ways (llama.cpp reads a
// preset key as any of its flag's names or its env variable): the value
// of the last one set.
func (s Spec) option(keys ...string) (string, bool) {
	for i := len(s.Options) - 1; i >= 0; i-- {
		if slices.Contains(keys, s.Options[i].Key) {
			return s.Options[i].Value, true
		}
	}
	return "", false
}

// The spellings of the preset keys the catalog resolves a model from.
var (
	modelKeys  = []string{"model", "m", "LLAMA_ARG_MODEL"}
	hfRepoKeys = []string{"hf-repo", "hf", "hfr", "LLAMA_ARG_HF_REPO"}
)

// Remote is the hub model ("owner/repo[:TAG]") that a load of s fetches
// first: the preset's hf-repo when no file resolved from it (the cache
// lacks it); "" otherwise.
func (s Spec) Remote() string {
	if s.Path != "" {
		return ""
	}
	repo, _ := s.option(hfRepoKeys...)
	return repo
}

// Section is one [name] of an INI file, its options in file order.
type Section struct {
	Name    string
	Options []Option
}

// ParseINI reads llama.cpp's preset format: [section] headers, key = value
// lines, ; and # comments (also after a value), blank lines. Keys before
// the first header belong to the section "".
func ParseINI(r io.Reader) ([]Section, error) {
	out := []Section{{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == ';' || line[0] == '#':
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 || strings.TrimSpace(stripComment(line[end+1:])) != "" {
				return nil, fmt.Errorf("line %d: bad section header %q", n, line)
			}
			out = append(out, Section{Name: strings.TrimSpace(line[1:end])})
		default:
			k, v, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(k)
			if !ok || !iniKey.MatchString(k) {
				return nil, fmt.Errorf("line %d: want key = value, got %q", n, line)
			}
			s := &out[len(out)-1]
			s.Options = append(s.Options, Option{k, strings.TrimSpace(stripComment(v))})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out[0].Options) == 0 {
		out = out[1:]
	}
	return out, nil
}

var iniKey = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]*$`)

// stripComment drops a ; or # comment that follows whitespace.
func stripComment(v string) string {
	for i := 0; i < len(v); i++ {
		if (v[i] == ';' || v[i] == '#') && (i == 0 || v[i-1] == ' ' || v[i-1] == '\t') {
			return v[:i]
		}
	}
	return v
}

// Sources are where the catalog comes from; any may be "".
type Sources struct {
	Dir    string // --models-dir: NAME.gguf files, or NAME/ directories holding one
	Cache  string // a Hugging Face hub cache: models--OWNER--REPO/snapshots/REV/[DIR/]FILE.gguf
	Preset string // --models-preset: llama.cpp's INI presets
}

// Load reads the catalog. A model in several sources is one model: the
// models dir overrides the cache, a preset's options merge into either.
// The preset's [*] section applies to every model.
func (s Sources) Load() ([]Spec, error) {
	byName := map[string]*Spec{}
	var order []string
	add := func(sp Spec) {
		if old, ok := byName[sp.Name]; ok {
			*old = sp
			return
		}
		byName[sp.Name] = &sp
		order = append(order, sp.Name)
	}
	var cache []cached
	if s.Cache != "" {
		var err error
		if cache, err = scanCache(s.Cache); err != nil {
			return nil, err
		}
		for _, c := range cache {
			add(Spec{Name: c.id(), Source: "cache", Path: c.path})
		}
	}
	if s.Dir != "" {
		dir, err := scanDir(s.Dir)
		if err != nil {
			return nil, err
		}
		for _, sp := range dir {
			add(sp)
		}
	}
	var global []Option
	dedup := map[string]bool{} // cache files a preset takes over
	if s.Preset != "" {
		f, err := os.Open(s.Preset)
		if err != nil {
			return nil, fmt.Errorf("models preset: %w", err)
		}
		secs, err := ParseINI(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("models preset %s: %w", s.Preset, err)
		}
		for _, sec := range secs {
			if sec.Name == "*" {
				global = sec.Options
			}
		}
		for _, sec := range secs {
			if sec.Name == "*" || sec.Name == "" {
				continue
			}
			sp := Spec{Name: sec.Name, Source: "preset"}
			if old, ok := byName[sec.Name]; ok {
				sp = *old
				sp.Source = "preset"
			}
			sp.Options = append(slices.Clone(global), sec.Options...)
			add(sp)
			if v, ok := byName[sec.Name].Option("dedup-cache-models"); ok && truthy(v) {
				if repo, ok := byName[sec.Name].option(hfRepoKeys...); ok {
					if p := resolveRepo(cache, repo); p != "" {
						dedup[p] = true
					}
				}
			}
		}
	}
	out := make([]Spec, 0, len(order))
	for _, name := range order {
		sp := *byName[name]
		if sp.Source != "preset" && len(global) > 0 {
			sp.Options = append(slices.Clone(global), sp.Options...)
		}
		sp.resolve(cache)
		if sp.Source == "cache" && dedup[sp.Path] {
			sp.Hidden = true
		}
		out = append(out, sp)
	}
	return out, nil
}

// resolve sets Path, Aliases and Startup from the options.
func (s *Spec) resolve(cache []cached) {
	if p, ok := s.option(modelKeys...); ok {
		s.Path = p
	} else if repo, ok := s.option(hfRepoKeys...); ok && s.Path == "" {
		s.Path = resolveRepo(cache, repo)
	}
	if a, ok := s.Option("alias"); ok {
		for _, n := range strings.Split(a, ",") {
			if n = strings.TrimSpace(n); n != "" && n != s.Name {
				s.Aliases = append(s.Aliases, n)
			}
		}
	}
	if v, ok := s.Option("load-on-startup"); ok {
		s.Startup = truthy(v)
	}
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "on", "yes", "enabled":
		return true
	}
	return false
}

// cached is one GGUF of a Hugging Face hub cache.
type cached struct{ repo, tag, path string }

func (c cached) id() string { return c.repo + ":" + c.tag }

var (
	ggufTag   = regexp.MustCompile(`(?i)[-.]([A-Z0-9_]+)$`)
	ggufSplit = regexp.MustCompile(`(?i)^(.+)-([0-9]{5})-of-([0-9]{5})$`)
)

// companion reports GGUF files that are not models of their own.
func companion(name string) bool {
	if strings.Contains(name, "mmproj") {
		return true
	}
	for _, p := range []string{"mtp-", "dspark-", "dflash-", "eagle3-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// scanCache lists the models of a hub cache as llama.cpp does: one per
// repository and quantization tag, the tag being the last -TAG or .TAG of
// the file's path in the snapshot, subfolders included
// (Q4_K_M/m-Q4_K_M-00001-of-00002.gguf is TAG Q4_K_M); a split model by
// its first part; projectors and speculative heads are no models. Where
// llama.cpp reads only the snapshot refs/ names, every snapshot is read,
// that one first (hfhub's Remove removes a tag from all of them).
func scanCache(dir string) ([]cached, error) {
	repos, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("models cache: %w", err)
	}
	var out []cached
	seen := map[string]bool{}
	for _, r := range repos {
		name, ok := strings.CutPrefix(r.Name(), "models--")
		repo := strings.ReplaceAll(name, "--", "/")
		if !ok || !r.IsDir() || strings.Count(repo, "/") != 1 || strings.HasPrefix(repo, "/") || strings.HasSuffix(repo, "/") {
			continue
		}
		for _, snap := range snapshots(filepath.Join(dir, r.Name())) {
			for _, rel := range snapshotFiles(snap) {
				tag, ok := cacheTag(rel)
				if !ok {
					continue
				}
				c := cached{repo, tag, filepath.Join(snap, filepath.FromSlash(rel))}
				if !seen[c.id()] {
					seen[c.id()] = true
					out = append(out, c)
				}
			}
		}
	}
	return out, nil
}

// cacheTag is the tag of a model GGUF at path rel of a snapshot
// (llama.cpp's common_list_cached_models); ok is false for other files,
// split parts after the first and companions.
func cacheTag(rel string) (string, bool) {
	prefix, ok := strings.CutSuffix(rel, ".gguf")
	if !ok {
		return "", false
	}
	if m := ggufSplit.FindStringSubmatch(prefix); m != nil {
		if n, _ := strconv.Atoi(m[2]); n != 1 {
			return "", false
		}
		prefix = m[1]
	}
	for _, c := range []string{"mmproj", "mtp-", "eagle3-", "dflash-", "dspark-"} {
		if strings.Contains(prefix, c) {
			return "", false
		}
	}
	m := ggufTag.FindStringSubmatch(prefix)
	if m == nil {
		return "", false
	}
	return strings.ToUpper(m[1]), true
}

// snapshots are a cached repository's snapshot folders: the commit refs/
// names first (main's, else the first valid), then the others by name.
func snapshots(repoDir string) []string {
	root := filepath.Join(repoDir, "snapshots")
	ents, _ := os.ReadDir(root)
	first := hfhub.CachedCommit(repoDir)
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if e.Name() == first {
			out = append([]string{filepath.Join(root, e.Name())}, out...)
		} else {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out
}

// snapshotFiles lists the files (and links) under a snapshot, as
// '/'-separated paths relative to it, in lexical order.
func snapshotFiles(snap string) []string {
	var out []string
	_ = filepath.WalkDir(snap, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if rel, err := filepath.Rel(snap, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// resolveRepo finds the cached file of "OWNER/REPO[:TAG]" ("" if none):
// the tag's, or without a tag the repository's first.
func resolveRepo(cache []cached, repoTag string) string {
	repo, tag, _ := strings.Cut(repoTag, ":")
	for _, c := range cache {
		if c.repo == repo && (tag == "" || strings.EqualFold(c.tag, tag)) {
			return c.path
		}
	}
	return ""
}

// scanDir lists --models-dir as llama.cpp does: NAME.gguf is the model
// NAME; a directory NAME holding GGUFs is the model NAME (its first shard,
// or its one non-companion file).
func scanDir(dir string) ([]Spec, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("models dir: %w", err)
	}
	var out []Spec
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			files, _ := filepath.Glob(filepath.Join(p, "*.gguf"))
			slices.Sort(files)
			model := ""
			for _, f := range files {
				b := filepath.Base(f)
				if companion(b) {
					continue
				}
				if strings.Contains(b, "-00001-of-") || model == "" {
					model = f
				}
			}
			if model != "" {
				out = append(out, Spec{Name: e.Name(), Source: "models_dir", Path: model})
			}
			continue
		}
		if strings.HasSuffix(e.Name(), ".gguf") && !companion(e.Name()) {
			out = append(out, Spec{Name: strings.TrimSuffix(e.Name(), ".gguf"), Source: "models_dir", Path: p})
		}
	}
	return out, nil
}
