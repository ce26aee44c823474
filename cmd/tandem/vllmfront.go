package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/frontend/llm"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/vllmengines"
)

// vllmFrontFlags are `tandem frontend`'s flags for vLLM engine cores
// (--engine-protocol vllm), named as `vllm serve` names them.
type vllmFrontFlags struct {
	protocol  string // --engine-protocol: tandem or vllm
	model     string // --model: what the vLLM engines serve, for the tokenizer
	dpSize    int    // --data-parallel-size
	dpAddress string // --data-parallel-address
	dpPort    int    // --data-parallel-rpc-port
}

func (v *vllmFrontFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.protocol, "engine-protocol", "tandem", "`protocol` of the engine cores: tandem (tandem engine, --engines) or vllm (vLLM 0.33 engines started with `vllm serve --headless --data-parallel-address A --data-parallel-rpc-port P`; docs/wire.md §12)")
	fs.StringVar(&v.model, "model", "", "with --engine-protocol vllm: the model the vLLM engines serve (a GGUF file or a Hugging Face directory), for its tokenizer and chat template")
	fs.IntVar(&v.dpSize, "data-parallel-size", 1, "with --engine-protocol vllm: the vLLM engine cores (DP ranks) to wait for")
	fs.StringVar(&v.dpAddress, "data-parallel-address", "127.0.0.1", "with --engine-protocol vllm: the `address` vLLM engines reach this frontend at; the handshake and the ranks' sockets bind there")
	fs.IntVar(&v.dpPort, "data-parallel-rpc-port", 29550, "with --engine-protocol vllm: the handshake `port` (vLLM's --data-parallel-rpc-port)")
}

// start binds what vLLM's frontend binds and returns the ranks' endpoints
// for the engine client, the tokenizer it loaded (the frontend serves with
// it), and a func that closes the bridge.
func (v *vllmFrontFlags) start(f *frontendFlags, log *slog.Logger) (endpoints string, tok tokenizer.Tokenizer, stop func(), err error) {
	switch {
	case v.protocol != "vllm":
		return "", nil, nil, fmt.Errorf("--engine-protocol %q: want tandem or vllm", v.protocol)
	case f.engines != "":
		return "", nil, nil, fmt.Errorf("--engines is for Tandem engines; vLLM engines connect to --data-parallel-address:--data-parallel-rpc-port")
	case v.model == "" && f.tokenizer == "":
		return "", nil, nil, fmt.Errorf("--engine-protocol vllm needs --model (or --tokenizer): vLLM engines do not send the tokenizer")
	case v.dpSize < 1:
		return "", nil, nil, fmt.Errorf("--data-parallel-size %d: want at least 1", v.dpSize)
	}
	path := f.tokenizer
	if path == "" {
		path = v.model
	}
	ref, err := modelRef(path)
	if err != nil {
		return "", nil, nil, err
	}
	tok, err = llm.LoadTokenizer(ref, f.chatTemplate)
	if err != nil {
		return "", nil, nil, fmt.Errorf("--model: %w", err)
	}
	name := enginecore.ServedName(f.servedModelName, path)
	b, err := vllmengines.Start(vllmengines.Config{
		HandshakeAddress: "tcp://" + net.JoinHostPort(v.dpAddress, strconv.Itoa(v.dpPort)),
		Host:             v.dpAddress,
		Engines:          v.dpSize,
		Model:            ref,
		ServedModelName:  name,
		VocabSize:        tok.VocabSize(),
		EOSTokenIDs:      tok.EOS(),
		Logger:           log,
	})
	if err != nil {
		return "", nil, nil, err
	}
	return b.EndpointList(), tok, func() { _ = b.Close() }, nil
}
