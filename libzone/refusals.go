package libzone

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rauha-runtime/rauha/zone"
)

// refusalsFile holds, per zone name, why a zone that was asked for (by the
// node agent, from a ZonePolicy) could not be created in this root. It is a
// file, not a directory: a directory named like a container id would be
// taken for a container's state by reconcile.
const refusalsFile = "zone-refusals.json"

// NoteRefusal records why zone name could not be created here; an empty
// reason removes the note. A container that names the zone is then refused
// with that reason rather than with "does not exist", so the operator reads
// it where the container failed (for a pod: kubectl describe pod). Only the
// node agent writes these notes; the runtime reads them only when it is
// refusing a container anyway.
func (e *Engine) NoteRefusal(name, reason string) error {
	if err := zone.ValidateName("zone name", name); err != nil {
		return err
	}
	unlock, err := e.lockRootFile(refusalsFile + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	notes, err := e.refusals()
	if err != nil {
		return err
	}
	if notes[name] == reason {
		return nil
	}
	if reason == "" {
		delete(notes, name)
	} else {
		notes[name] = reason
	}
	path := filepath.Join(e.root, refusalsFile)
	if len(notes) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	raw, err := json.Marshal(notes)
	if err != nil {
		return err
	}
	// Written aside and renamed: a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// refusals reads the notes of NoteRefusal; a missing file is no notes.
func (e *Engine) refusals() (map[string]string, error) {
	notes := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(e.root, refusalsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return notes, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &notes); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(e.root, refusalsFile), err)
	}
	return notes, nil
}
