package libzone

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/flock"
)

// lockPolicies serializes, across every rauha process of this root, the
// sequences that read a zone's policy from the store and push it to the
// kernel. Without it a create or reconcile that read a zone before a
// concurrent `zone update` to a stricter policy could push the older, looser
// policy after the update: the kernel would be looser than the store, which
// recovery must never allow. The lock is a file lock, so a killed rauha
// releases it.
func (e *Engine) lockPolicies() (unlock func(), err error) {
	return e.lockRootFile("policy.lock")
}

// lockRootFile takes an exclusive flock on the file name in the state root,
// creating both if needed.
func (e *Engine) lockRootFile(name string) (unlock func(), err error) {
	if err := os.MkdirAll(e.root, 0o700); err != nil {
		return nil, fmt.Errorf("state root %s: %w", e.root, err)
	}
	path := filepath.Join(e.root, name)
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
