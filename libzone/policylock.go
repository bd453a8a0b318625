package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/flock"
	"github.com/rauha-runtime/rauha/zone"
)

// lockPolicies serializes, across every rauha process of this root, the
// sequences that read a zone's policy from the store and push it to the
// kernel. Without it a create or reconcile that read a zone before a
// concurrent `zone update` to a stricter policy could push the older, looser
// policy after the update: the kernel would be looser than the store, which
// recovery must never allow. The lock is a file lock, so a killed rauha
// releases it.
func (e *Engine) lockPolicies() (unlock func(), err error) {
	if err := os.MkdirAll(e.root, 0o700); err != nil {
		return nil, fmt.Errorf("state root %s: %w", e.root, err)
	}
	path := filepath.Join(e.root, "policy.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := flock.Lock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// applyStored pushes zone name's policy as the store holds it now, under the
// policy lock. It reports false when the zone no longer exists.
func (e *Engine) applyStored(enf Enforcer, name string) (bool, error) {
	unlock, err := e.lockPolicies()
	if err != nil {
		return false, err
	}
	defer unlock()
	var z *zone.Zone
	err = e.store.View(func(tx *zone.Tx) (err error) {
		z, err = tx.Zone(name)
		return err
	})
	if errors.Is(err, zone.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("zone %s: %w", name, err)
	}
	return true, enf.Apply(z)
}
