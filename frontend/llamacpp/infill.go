package llamacpp

// FIM are a model's fill-in-the-middle tokens; NoToken where it has none.
type FIM struct {
	Pre, Suf, Mid int32 // required for /infill
	Rep, Sep      int32 // repository and file separators, optional
}

// NoToken marks a FIM token the vocabulary lacks.
const NoToken int32 = -1

// FIMNames are the texts llama.cpp recognizes each FIM token by when a
// GGUF does not name it (llama-vocab.cpp), in its order of preference.
var FIMNames = struct{ Pre, Suf, Mid, Rep, Sep []string }{
	Pre: []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "▁<PRE>", "<|code_prefix|>"},
	Suf: []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "▁<SUF>", "<|code_suffix|>"},
	Mid: []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "▁<MID>", "<|code_middle|>"},
	Rep: []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
	Sep: []string{"<|file_sep|>", "<file_sep>"},
}

// Missing names the first required FIM token the model lacks, "" when
// it has all three.
func (f FIM) Missing() string {
	switch NoToken {
	case f.Pre:
		return "FIM_PRE"
	case f.Suf:
		return "FIM_SUF"
	case f.Mid:
		return "FIM_MID"
	}
	return ""
}

// InfillInput is an /infill request, tokenized: every text is token ids.
type InfillInput struct {
	Prefix, Suffix, Prompt []int32
	Extra                  []ExtraChunk // input_extra, in order
	Repo                   []int32      // "myproject\n", after FIM_REP
	CurrentFile            []int32      // "filename\n", after the last FIM_SEP
	ChunkSeparator         []int32      // "\n\n--- snippet ---\n\n", between chunks without FIM_SEP
	BOS                    int32        // NoToken: the model adds none
	NBatch, NPredict, NCtx int
}

// ExtraChunk is one input_extra file: its name ("filename\n") and text.
type ExtraChunk struct{ File, Text []int32 }

// Infill lays out llama.cpp's repo-level FIM prompt
// (format_prompt_infill): [FIM_REP]myproject [FIM_SEP]file text …
// [FIM_SEP]filename, then BOS, [FIM_PRE]prefix prompt [FIM_SUF]suffix
// [FIM_MID]. The prefix keeps its last 3/4 of a batch, the suffix what is
// left of the batch's quarter, and the extra context its last tokens up
// to the context minus a batch and twice n_predict.
func Infill(in InfillInput, f FIM) []int32 {
	var extra []int32
	if f.Rep != NoToken {
		extra = append(append(extra, f.Rep), in.Repo...)
	}
	for _, c := range in.Extra {
		if f.Sep != NoToken {
			extra = append(append(extra, f.Sep), c.File...)
		} else {
			extra = append(extra, in.ChunkSeparator...)
		}
		extra = append(extra, c.Text...)
	}
	if f.Sep != NoToken {
		extra = append(append(extra, f.Sep), in.CurrentFile...)
	}
	takePrefix := min(len(in.Prefix), 3*(in.NBatch/4))
	takeSuffix := min(len(in.Suffix), max(0, in.NBatch/4-(2+len(in.Prompt))))
	takeExtra := min(max(0, in.NCtx-in.NBatch-2*in.NPredict), len(extra))

	out := make([]int32, 0, takeExtra+takePrefix+takeSuffix+len(in.Prompt)+5)
	out = append(out, extra[len(extra)-takeExtra:]...)
	if in.BOS != NoToken {
		out = append(out, in.BOS)
	}
	out = append(out, f.Pre)
	out = append(out, in.Prefix[len(in.Prefix)-takePrefix:]...)
	out = append(out, in.Prompt...)
	out = append(out, f.Suf)
	out = append(out, in.Suffix[:takeSuffix]...)
	return append(out, f.Mid)
}
