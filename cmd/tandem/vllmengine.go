package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/vllmfrontend"
)

// vllmEngineFlags are `tandem engine`'s flags for serving a vLLM frontend
// (--protocol vllm), named as `vllm serve --headless` names them.
type vllmEngineFlags struct {
	protocol  string // --protocol: tandem or vllm
	dpAddress string // --data-parallel-address
	dpPort    int    // --data-parallel-rpc-port
	dpSize    int    // --data-parallel-size
}

func (v *vllmEngineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.protocol, "protocol", "tandem", "`protocol` spoken to frontends: tandem (bind --listen for Tandem frontends) or vllm (connect to a vLLM 0.33 frontend at --data-parallel-address:--data-parallel-rpc-port as `vllm serve --headless` does; docs/wire.md §12)")
	fs.StringVar(&v.dpAddress, "data-parallel-address", "127.0.0.1", "with --protocol vllm: the vLLM frontend's `address` (its --data-parallel-address)")
	fs.IntVar(&v.dpPort, "data-parallel-rpc-port", 29550, "with --protocol vllm: the vLLM frontend's handshake `port` (its --data-parallel-rpc-port)")
	fs.IntVar(&v.dpSize, "data-parallel-size", 1, "with --protocol vllm: the DP ranks the vLLM frontend waits for (its --data-parallel-size); this engine is --data-parallel-rank")
}

// check validates the flags before the model loads.
func (v *vllmEngineFlags) check(f *engineFlags) error {
	switch {
	case v.protocol != "tandem" && v.protocol != "vllm":
		return fmt.Errorf("engine: --protocol %q: want tandem or vllm", v.protocol)
	case v.protocol == "tandem":
		return nil
	case f.listen != "":
		return fmt.Errorf("engine: --listen is for Tandem frontends; with --protocol vllm the engine connects to --data-parallel-address:--data-parallel-rpc-port")
	case v.dpSize < 1 || f.rank < 0 || f.rank >= v.dpSize:
		return fmt.Errorf("engine: --data-parallel-rank %d of --data-parallel-size %d: want 0 ≤ rank < size", f.rank, v.dpSize)
	case v.dpPort < 1 || v.dpPort > 65535:
		return fmt.Errorf("engine: --data-parallel-rpc-port %d: want 1..65535", v.dpPort)
	}
	return nil
}

// serve runs core for the vLLM frontend until ctx ends or the engine
// dies.
func (v *vllmEngineFlags) serve(ctx context.Context, f *engineFlags, core *enginecore.Core, pub enginecore.Publisher, log *slog.Logger) error {
	addr := "tcp://" + net.JoinHostPort(v.dpAddress, strconv.Itoa(v.dpPort))
	log.Info("engine core connecting to the vLLM frontend", "handshake", addr, "rank", f.rank, "data_parallel_size", v.dpSize)
	return vllmfrontend.Run(ctx, vllmfrontend.Config{
		HandshakeAddress: addr,
		Gate: vllmfrontend.GateConfig{Rank: f.rank, DPSize: v.dpSize, MaxNumSeqs: f.maxNumSeqs,
			MaxNumBatchedTokens: f.maxNumBatchedTokens, DType: dtypeOf(f.device), HeartbeatInterval: f.heartbeatInterval},
		HandshakeTimeout: 5 * time.Minute,
		Log:              log,
	}, func(ctx context.Context, p *vllmfrontend.Pipe) error { return core.Serve(ctx, p, pub) })
}

// dtypeOf is the model's dtype as vLLM reports it: the CUDA backend keeps
// weights and the KV cache in bf16, the CPU backend computes in float32.
func dtypeOf(device string) string {
	if strings.HasPrefix(device, "cuda") {
		return "bfloat16"
	}
	return "float32"
}
