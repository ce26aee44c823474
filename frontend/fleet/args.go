package fleet

import "strings"

// llamaFlags are llama-server's preset keys that Tandem's serve spells
// otherwise.
var llamaFlags = map[string]string{
	"c": "max-model-len", "ctx-size": "max-model-len",
	"np": "max-num-seqs", "parallel": "max-num-seqs",
	"b": "max-num-batched-tokens", "batch-size": "max-num-batched-tokens",
	"t": "threads", "chat-template-file": "chat-template", "no-webui": "disable-web-ui", "no-ui": "disable-web-ui",
}

// routerKeys are preset keys the router itself reads.
var routerKeys = map[string]bool{
	"m": true, "model": true, "hf": true, "hfr": true, "hf-repo": true, "hff": true, "hf-file": true, "alias": true,
	"load-on-startup": true, "stop-timeout": true, "dedup-cache-models": true, "host": true, "port": true,
}

// Args turns the spec's options into `tandem serve` flags: llama-server's
// names are translated, LLAMA_ARG_* keys read as their flags, and those
// serve does not have (known says which it has) come back as ignored.
func (s Spec) Args(known func(flag string) bool) (args, ignored []string) {
	for _, o := range s.Options {
		k := o.Key
		if rest, ok := strings.CutPrefix(k, "LLAMA_ARG_"); ok {
			k = strings.ReplaceAll(strings.ToLower(rest), "_", "-")
		}
		if routerKeys[k] {
			continue
		}
		if t, ok := llamaFlags[k]; ok {
			k = t
		}
		if !known(k) {
			ignored = append(ignored, o.Key)
			continue
		}
		args = append(args, "--"+k+"="+o.Value)
	}
	return args, ignored
}
