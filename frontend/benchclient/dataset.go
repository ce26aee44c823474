package benchclient

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Datasets.
const (
	DatasetRandom           = "random"            // independent prompts of random words
	DatasetPrefixRepetition = "prefix-repetition" // NumPrefixes shared prefixes, random suffixes, shuffled
	DatasetMultiTurn        = "multi-turn"        // conversations: shared system prompt, growing history
)

// Datasets lists them.
var Datasets = []string{DatasetRandom, DatasetPrefixRepetition, DatasetMultiTurn}

// words is the vocabulary synthetic text is drawn from: common English
// words, so any tokenizer turns each into about one token.
var words = strings.Fields(`the of and to in is was for that with as on by at from his her
he she it they we you are be this have had not but what all were when there can an
your which their said if do will each about how up out them then many some so these
would other into has more two time like been who now people my made over did down only
way find use may water long little very after words called just where most know get
through back much before go good new write our used me man too any day same right look
think also around another came come work three word must because does part even place
well such here take why things help put years different away again off went old number
great tell men say small every found still between name should home big give air line
set own under read last never us left end along while might next sound below saw
something thought both few those always looked show large often together asked house
world going want school important until form food keep children feet land side without
boy once animals life enough took sometimes four head above kind began almost live page
got earth need far hand high year mother light parts country father let night following
picture being study second eyes soon times story boys since white days ever paper hard
near sentence better best across during today others however sure means knew try told
young miles sun ways thing whole hear example heard several change answer room sea
against top turned learn point city play toward five using himself usually money seen
car morning river garden window music stone bridge forest market winter summer`)

// text returns n words drawn from rng.
func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// Prompt is one request of a single-shot dataset.
type Prompt struct {
	Text      string
	MaxTokens int
}

// Conversation is one multi-turn conversation: the user messages of its
// turns (the first carries the conversation's own context); the answers
// come from the server.
type Conversation struct {
	ID        string // sent as X-Session-ID
	System    string // shared by every conversation
	UserTurns []string
	MaxTokens int
}

// DatasetConfig sizes a dataset. Lengths are in words (the server's usage
// reports tokens: about 1.1–1.3 per word with common tokenizers).
type DatasetConfig struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`

	NumPrompts int     `json:"num_prompts"` // random, prefix-repetition
	InputLen   int     `json:"input_len"`   // random: words per prompt
	OutputLen  int     `json:"output_len"`  // max_tokens of every request
	RangeRatio float64 `json:"range_ratio"` // random: lengths uniform in [len·(1−r), len·(1+r)]

	PrefixLen   int `json:"prefix_len"`   // prefix-repetition: words of each shared prefix
	SuffixLen   int `json:"suffix_len"`   // prefix-repetition: words of each random suffix
	NumPrefixes int `json:"num_prefixes"` // prefix-repetition: distinct prefixes

	NumConversations int `json:"num_conversations"` // multi-turn
	NumTurns         int `json:"num_turns"`         // multi-turn: user turns per conversation
	SystemLen        int `json:"system_len"`        // multi-turn: words of the shared system prompt
	ContextLen       int `json:"context_len"`       // multi-turn: words of each conversation's own context (first turn)
	UserLen          int `json:"user_len"`          // multi-turn: words of each user question
}

func (c *DatasetConfig) rng() *rand.Rand { return rand.New(rand.NewPCG(c.Seed, 0x74616e64656d)) }

func vary(rng *rand.Rand, n int, ratio float64) int {
	if ratio <= 0 || n <= 1 {
		return max(n, 1)
	}
	lo, hi := int(float64(n)*(1-ratio)), int(float64(n)*(1+ratio))
	return max(lo+rng.IntN(max(hi-lo, 0)+1), 1)
}

// Prompts builds a single-shot dataset (random or prefix-repetition).
func (c *DatasetConfig) Prompts() ([]Prompt, error) {
	rng := c.rng()
	var out []Prompt
	switch c.Name {
	case DatasetRandom:
		for range c.NumPrompts {
			out = append(out, Prompt{Text: text(rng, vary(rng, c.InputLen, c.RangeRatio)), MaxTokens: c.OutputLen})
		}
	case DatasetPrefixRepetition:
		n := max(c.NumPrefixes, 1)
		prefixes := make([]string, n)
		for i := range prefixes {
			prefixes[i] = fmt.Sprintf("Document %d. %s", i, text(rng, c.PrefixLen))
		}
		for i := range c.NumPrompts {
			out = append(out, Prompt{Text: prefixes[i%n] + "\n" + text(rng, c.SuffixLen), MaxTokens: c.OutputLen})
		}
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	default:
		return nil, fmt.Errorf("%w %q: not a single-shot dataset", ErrDataset, c.Name)
	}
	return out, nil
}

// Conversations builds the multi-turn dataset.
func (c *DatasetConfig) Conversations() ([]Conversation, error) {
	if c.Name != DatasetMultiTurn {
		return nil, fmt.Errorf("%w %q: not a multi-turn dataset", ErrDataset, c.Name)
	}
	rng := c.rng()
	system := "You are a helpful assistant. Answer briefly. Reference notes: " + text(rng, c.SystemLen)
	out := make([]Conversation, c.NumConversations)
	for i := range out {
		cv := Conversation{ID: fmt.Sprintf("bench-conv-%d-%d", c.Seed, i), System: system, MaxTokens: c.OutputLen}
		for t := range max(c.NumTurns, 1) {
			q := fmt.Sprintf("Question %d: %s?", t+1, text(rng, c.UserLen))
			if t == 0 {
				q = fmt.Sprintf("Here is document %d: %s\n\n%s", i, text(rng, c.ContextLen), q)
			}
			cv.UserTurns = append(cv.UserTurns, q)
		}
		out[i] = cv
	}
	return out, nil
}
