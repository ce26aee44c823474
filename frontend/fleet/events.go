package fleet

// EventKind is what an Event reports, named as llama-server's
// GET /models/sse names it.
type EventKind int

// The kinds of Event (llama-server's notify_sse calls).
const (
	StatusChange     EventKind = iota // a model's status changed (update_status)
	ModelStatus                       // a model's entry was (re)created: a load or download begins (load)
	ModelRemove                       // a model was forgotten (remove, and an exit after a reload dropped it)
	ModelsReload                      // the catalog was re-read; Model is "*" (load_models)
	DownloadProgress                  // a download's files progressed (update_download_progress)
	DownloadFinished                  // a download ended well
	DownloadFailed                    // a download failed or was cancelled
)

func (k EventKind) String() string {
	switch k {
	case ModelStatus:
		return "model_status"
	case ModelRemove:
		return "model_remove"
	case ModelsReload:
		return "models_reload"
	case DownloadProgress:
		return "download_progress"
	case DownloadFinished:
		return "download_finished"
	case DownloadFailed:
		return "download_failed"
	}
	return "status_change"
}

// Event is one change of the fleet. The core records it as data in the
// call that made the change and Events hands it out, as etcd-raft's
// RawNode hands out Ready: the core does no IO, the shell sends.
type Event struct {
	Kind     EventKind
	Model    string // the model's name (never an alias); "*" for ModelsReload
	Status   Status // StatusChange, ModelStatus: the status now
	ExitCode int    // StatusChange to Unloaded: as /models's exit_code (0 when stopped on purpose)
	// DownloadProgress: every file of the download so far, by URL (the
	// model's Progress, which is never changed in place)
	Progress map[string]Transfer
}

// Events returns the events recorded since the last call, oldest first,
// and forgets them. The caller drains them after every change: they
// pile up until then.
func (f *Fleet) Events() []Event {
	ev := f.events
	f.events = nil
	return ev
}

func (f *Fleet) record(e Event) { f.events = append(f.events, e) }
