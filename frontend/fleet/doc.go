// Package fleet is llama-server's router mode (several models): a server
// with no model of its own that starts one child `tandem serve` per model
// on demand and forwards each request to the child of the model it names.
//
// The pure core (Fleet) holds every model's state (unloaded, loading,
// loaded; downloading, downloaded), the least-recently-used choice of a
// model to give up when --models-max are running, and the FIFO queue of
// requests that wait for a slot; requests for one model share one queue
// entry. Catalog reads the models: GGUF files of --models-dir, a Hugging
// Face hub cache directory (models--OWNER--REPO/snapshots/REV/[DIR/]FILE.gguf,
// ids OWNER/REPO:TAG) and llama.cpp's INI presets (--models-preset).
// Router is the shell: it starts and stops the children (each in its own
// process group), polls their /health and proxies HTTP, event streams
// included, with llama-server's routes (/models, /models/load,
// /models/unload, /props, /v1/stream) on top. The core records each
// change of a model as an Event; the router drains them after every
// change and streams them to GET /models/sse's subscribers, each through
// a bounded buffer.
//
// POST /models downloads "owner/repo[:TAG]" from the Hugging Face hub
// into the cache (package hfhub) as llama-server does: the name is
// resolved on the hub before the answer, then the files come in the
// background while the core lists the model as downloading and records
// its progress; at the end the router reloads the catalog, where the
// cache's model (OWNER/REPO:TAG) replaces the download's entry. DELETE
// /models cancels a download or stops a child, removes the files and
// forgets the model.
//
// A preset model whose hf-repo the cache lacks is fetched when it loads:
// the core lists it as downloading (holding a slot, as a loading child
// does), the router downloads it as above and the child starts once the
// file is in; a failed download fails the load. RemotePreset fetches the
// preset.ini of a preset repository (llama-server's -hf with no model),
// which the router then reads as its --models-preset.
package fleet
