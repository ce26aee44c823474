package hfhub

import (
	"errors"
	"slices"
	"testing"
)

func files(paths ...string) []File {
	fs := make([]File, len(paths))
	for i, p := range paths {
		fs[i] = File{Path: p}
	}
	return fs
}

func paths(fs []File) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

func TestPlanFor(t *testing.T) {
	multi := files("README.md", "model-F16.gguf", "model-Q8_0.gguf", "model-Q4_K_M.gguf", "model.imatrix.gguf",
		"mmproj-model-F16.gguf", "mmproj-model-Q8_0.gguf")
	split := files("config.json",
		"Q4_K_M/big-Q4_K_M-00002-of-00003.gguf", "Q4_K_M/big-Q4_K_M-00001-of-00003.gguf", "Q4_K_M/big-Q4_K_M-00003-of-00003.gguf",
		"BF16/big-BF16-00001-of-00002.gguf", "BF16/big-BF16-00002-of-00002.gguf", "mmproj-F16.gguf", "BF16/mmproj-BF16.gguf")
	tests := []struct {
		name   string
		files  []File
		tag    string
		model  []string
		mmproj string
		err    error
	}{
		{"default is Q4_K_M", multi, "", []string{"model-Q4_K_M.gguf"}, "mmproj-model-Q8_0.gguf", nil},
		{"tag, any case", multi, "q8_0", []string{"model-Q8_0.gguf"}, "mmproj-model-Q8_0.gguf", nil},
		{"F16 takes the F16 projector", multi, "F16", []string{"model-F16.gguf"}, "mmproj-model-F16.gguf", nil},
		{"no such tag", multi, "Q2_K", nil, "", ErrNoGGUF},
		{"Q8_0 when no Q4_K_M", files("m-Q5_K_S.gguf", "m-Q8_0.gguf"), "", []string{"m-Q8_0.gguf"}, "", nil},
		{"else the first model", files("mmproj-x.gguf", "mtp-m-F16.gguf", "m-IQ2_XXS.gguf", "m-F32.gguf"), "", []string{"m-IQ2_XXS.gguf"}, "mmproj-x.gguf", nil},
		{"only companions", files("mmproj-x.gguf", "imatrix.gguf", "eagle3-m.gguf"), "", nil, "", ErrNoGGUF},
		{"no GGUF", files("README.md", "model.safetensors"), "", nil, "", ErrNoGGUF},
		{"tag is a prefix of another", files("m-Q4_K_M.gguf"), "Q4_K", nil, "", ErrNoGGUF},
		{"tag in a directory name", files("Q4_K_M-dir/m.gguf"), "Q4_K_M", []string{"Q4_K_M-dir/m.gguf"}, "", nil},
		{"split, every part in order", split, "Q4_K_M", []string{"Q4_K_M/big-Q4_K_M-00001-of-00003.gguf",
			"Q4_K_M/big-Q4_K_M-00002-of-00003.gguf", "Q4_K_M/big-Q4_K_M-00003-of-00003.gguf"}, "mmproj-F16.gguf", nil},
		{"the deeper projector wins", split, "bf16", []string{"BF16/big-BF16-00001-of-00002.gguf", "BF16/big-BF16-00002-of-00002.gguf"}, "BF16/mmproj-BF16.gguf", nil},
		{"split missing a part", files("m-Q4_K_M-00001-of-00003.gguf", "m-Q4_K_M-00003-of-00003.gguf"), "", nil, "", ErrNoGGUF},
		{"a projector in another directory is not taken", files("a/m-Q4_K_M.gguf", "b/mmproj-F16.gguf"), "", []string{"a/m-Q4_K_M.gguf"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planFor(Ref{Repo: "o/r", Tag: tt.tag}, tt.files, "", false)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			mm := ""
			if p.MMProj != nil {
				mm = p.MMProj.Path
			}
			if !slices.Equal(paths(p.Model), tt.model) || mm != tt.mmproj {
				t.Errorf("model %v mmproj %q, want %v %q", paths(p.Model), mm, tt.model, tt.mmproj)
			}
		})
	}
}

// TestPlanForFile: a named file (-hff) overrides the tag, takes its split
// parts and projector, and must be in the commit; a preset still wins.
func TestPlanForFile(t *testing.T) {
	fs := files("README.md", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "mmproj-m-F16.gguf",
		"big/big-F16-00001-of-00002.gguf", "big/big-F16-00002-of-00002.gguf")
	tests := []struct {
		name, tag, file string
		files           []File
		model           []string
		err             error
	}{
		{"overrides the tag", "Q4_K_M", "m-Q8_0.gguf", fs, []string{"m-Q8_0.gguf"}, nil},
		{"any model file", "", "m-Q8_0.gguf", fs, []string{"m-Q8_0.gguf"}, nil},
		{"a split part brings the others", "", "big/big-F16-00002-of-00002.gguf", fs,
			[]string{"big/big-F16-00001-of-00002.gguf", "big/big-F16-00002-of-00002.gguf"}, nil},
		{"matched exactly", "", "M-Q8_0.gguf", fs, nil, ErrNotFound},
		{"not there", "", "m-F16.gguf", fs, nil, ErrNotFound},
		{"not a GGUF", "", "README.md", fs, nil, ErrNoGGUF},
		{"a preset repository is its preset", "", "m-Q8_0.gguf", append(files("preset.ini"), fs...), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := planFor(Ref{Repo: "o/r", Tag: tt.tag}, tt.files, tt.file, true)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !slices.Equal(paths(p.Model), tt.model) {
				t.Errorf("model %v, want %v", paths(p.Model), tt.model)
			}
		})
	}
}

func TestPlanForPresetAndNoMMProj(t *testing.T) {
	fs := files("preset.ini", "m-Q4_K_M.gguf", "mmproj-F16.gguf")
	p, err := planFor(Ref{Repo: "o/r", Tag: "Q4_K_M"}, fs, "", false)
	if err != nil || p.Preset == nil || len(p.files()) != 1 || p.files()[0].Path != "preset.ini" {
		t.Errorf("preset repository: %+v, %v; want preset.ini alone", p, err)
	}
	p, err = planFor(Ref{Repo: "o/r"}, fs[1:], "", true)
	if err != nil || p.MMProj != nil || len(p.files()) != 1 {
		t.Errorf("NoMMProj: %+v, %v; want the model alone", p, err)
	}
}

func TestSplitOf(t *testing.T) {
	tests := []struct {
		in   string
		want split
		ok   bool
	}{
		{"m-Q4_K_M.gguf", split{"m-Q4_K_M", "Q4_K_M", 1, 1}, true},
		{"d/m.q8_0-00002-of-00004.gguf", split{"d/m.q8_0", "Q8_0", 2, 4}, true},
		{"model.gguf", split{"model", "", 1, 1}, true},
		{"README.md", split{}, false},
	}
	for _, tt := range tests {
		if got, ok := splitOf(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("splitOf(%q) = %+v %v, want %+v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	for tag, bits := range map[string]int{"Q4_K_M": 4, "F16": 16, "BF16": 16, "IQ2_XXS": 2, "Q8_0": 8, "": 0, "F": 0, "Q99999999999999999999": 999999999} {
		if got := quantBits(tag); got != bits {
			t.Errorf("quantBits(%q) = %d, want %d", tag, got, bits)
		}
	}
}
