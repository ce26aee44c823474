package fleet

// A load of a preset model whose hf-repo the cache lacks fetches it
// first. llama-server's child downloads it while the model is listed as
// loading; Tandem's router downloads it (hfhub, as POST /models does), so
// the model is listed as downloading with download_progress events, and
// then download_finished and the child's loading and loaded follow, or
// download_failed and the load fails as a child that could not fetch its
// model. The fetch holds a slot, as llama-server's loading child does.

// Fetch marks the unloaded model name downloading its files for a load.
// Like Start, it returns false (and no error) when the model is not
// unloaded, and ErrLimit when every slot is taken.
func (f *Fleet) Fetch(name string) (bool, error) {
	m, err := f.takeSlot(name)
	if m == nil {
		return false, err
	}
	m.Status, m.Fetching, m.Progress = Downloading, true, nil
	f.record(Event{Kind: ModelStatus, Model: m.Name, Status: Downloading})
	return true, nil
}

// Fetched ends a load's download of name. With the model's file at path
// it goes loading on port, and Fetched returns true: the caller starts
// its child. With path "" (the download failed) it is unloaded and
// failed with exit code 1; stopped meanwhile (Stop, or a reload that
// dropped it: inCatalog false), it is unloaded with 0 whatever the
// download did, and forgotten if the catalog lost it.
func (f *Fleet) Fetched(name, path string, port int, inCatalog bool) bool {
	m := f.find(name)
	if m == nil || !m.Fetching {
		return false
	}
	kind := DownloadFinished
	if path == "" {
		kind = DownloadFailed
	}
	f.record(Event{Kind: kind, Model: m.Name})
	m.Fetching, m.Progress = false, nil
	if path == "" || m.Stopping || !inCatalog {
		f.Exited(m.Name, 1, inCatalog)
		return false
	}
	m.Path, m.Status, m.Port = path, Loading, port
	f.record(Event{Kind: ModelStatus, Model: m.Name, Status: Loading})
	f.record(Event{Kind: StatusChange, Model: m.Name, Status: Loading})
	return true
}
