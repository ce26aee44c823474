// Package hfhub downloads GGUF models from the Hugging Face Hub into the
// hub's cache layout, as llama.cpp does for -hf and for the router's
// POST /models {"model": "owner/repo[:TAG]"}; DELETE's counterpart is
// Remove. The cache is the one huggingface_hub and llama.cpp share, so
// Tandem's --models-cache (package fleet) lists what Pull fetched, as the
// model Model.Name says.
//
// The pure core reads names and chooses files: ParseRef checks
// "owner/repo[:TAG]" (llama.cpp's repository rule; the tag is matched
// literally); the chooser takes, for a tag, the first model GGUF whose
// path holds the tag followed by '.' or '-' (case-insensitive), for no
// tag Q4_K_M, then Q8_0, then the first model GGUF; all parts of a split
// model (-00001-of-0000N.gguf); and the projector llama-server loads with
// the model (an "mmproj" GGUF in the model's directory or above, the
// closest in quantization bits), which router downloads fetch too unless
// Options.NoMMProj. Projectors, importance matrices and speculative heads
// (mtp-, eagle3-, dflash-, dspark-) are never the model. ResolveFile,
// PullFile and LocalFile take the model's file by its exact path instead
// (llama-server's -hff), overriding the tag. A repository with a
// preset.ini at its root is a preset repository: that file alone is
// fetched.
//
// PullCheckpoint and LocalCheckpoint take a Transformers repository as
// `vllm serve OWNER/REPO` does (checkpoint.go): the root's config.json,
// other JSON and Jinja files, then the safetensors weights the loader
// opens (the index's shards, else model.safetensors, else all), and name
// the snapshot directory; ErrNoCheckpoint for a repository without them.
//
// The shell is Client. Resolve asks the hub two things:
//
//	GET {endpoint}api/models/{repo}/refs                       branches[].name, .targetCommit ("main" preferred)
//	GET {endpoint}api/models/{repo}/tree/{commit}?recursive=true   [{type, path, oid, size, lfs: {oid}}], Link: rel="next" pages
//
// and Download fetches GET {endpoint}{repo}/resolve/{commit}/{path}
// (redirects followed) into
//
//	models--OWNER--REPO/blobs/OID          OID the LFS sha256, else git's sha1
//	models--OWNER--REPO/snapshots/COMMIT/PATH -> ../../blobs/OID
//	models--OWNER--REPO/refs/BRANCH        the commit
//
// through OID.incomplete: resumed with a Range request when a partial
// file exists, its size and LFS sha256 checked before the rename. Files
// already in the snapshot are skipped; a blob another commit holds is
// linked, not fetched. Branch names, file paths and oids from the hub are
// checked before they touch the disk (no absolute paths, no ".."). The
// endpoint is Options.Endpoint, else $MODEL_ENDPOINT, $HF_ENDPOINT or
// https://huggingface.co/; the token, Options.Token or $HF_TOKEN, goes
// as "Authorization: Bearer" on every request.
//
// Errors are *Error, naming the repository and tag and wrapping a kind a
// caller maps to an HTTP status: ErrInvalidName, ErrNotFound (404),
// ErrUnauthorized (401, 403: private or gated), ErrNoGGUF,
// ErrNoCheckpoint, ErrCorrupt, ErrHub; or the cause, ctx's error
// included.
//
// Where it parts from llama.cpp: a cancelled download keeps its partial
// file for the next Pull (llama.cpp deletes it); there are no retries
// with sleeps (a failed Pull resumes where it stopped); a split model
// missing a part is refused up front; the token is sent as given
// (llama.cpp drops one not shaped hf_…); Remove with a tag removes the
// tag's files from every cached commit, not only the one refs/ names,
// since the cache scanner lists every commit.
package hfhub
