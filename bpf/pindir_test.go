package bpf

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The names are the ones every rauha so far has used: changing them would
// orphan the pins of running containers on upgrade.
func TestPinDirFor(t *testing.T) {
	for root, want := range map[string]string{
		DefaultRoot:          "/sys/fs/bpf/rauha",
		"/run/runc":          "/sys/fs/bpf/rauha-58ff279fd132", // printf %s /run/runc | sha256sum | cut -c1-12
		"/var/run/rauha-alt": "/sys/fs/bpf/rauha-a13155d8f442",
	} {
		if got := PinDirFor(root); got != want {
			t.Errorf("PinDirFor(%q) = %s, want %s", root, got, want)
		}
	}
}

// Pins record their root; RemoveOrphan removes them (links, directory,
// anchor cgroup) once that root is gone, and never pins whose root exists
// or that record none.
func TestRemoveOrphan(t *testing.T) {
	requireRoot(t)
	root := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	pinDir := filepath.Join(bpffsRoot, "rauha-test-orphan-"+itoa(uint64(os.Getpid())))
	t.Cleanup(func() { _ = RemovePins(pinDir) })
	k, err := Open(pinDir, root, false)
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	if got := RecordedRoot(pinDir); got != root {
		t.Fatalf("RecordedRoot = %q, want %s", got, root)
	}
	gone := func(r string) bool { _, err := os.Stat(r); return os.IsNotExist(err) }

	if removed, err := RemoveOrphan(pinDir, gone); err != nil || removed {
		t.Fatalf("RemoveOrphan with the root present = %v, %v", removed, err)
	}
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveOrphan(pinDir, gone); err != nil || !removed {
		t.Fatalf("RemoveOrphan with the root gone = %v, %v", removed, err)
	}
	if exists(pinDir) || exists(anchorCgroup(pinDir)) {
		t.Errorf("left behind: pins %v, anchor cgroup %v", exists(pinDir), exists(anchorCgroup(pinDir)))
	}

	// Unrecorded pins (an older rauha's) stay, whatever gone says.
	k, err = Open(pinDir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	if removed, err := RemoveOrphan(pinDir, func(string) bool { return true }); err != nil || removed {
		t.Errorf("RemoveOrphan of pins without a root record = %v, %v", removed, err)
	}
}

// A lock granted on a pin directory that was removed (and made again)
// while the caller waited protects nothing: lockPinDir refuses it, and
// createAndLock locks the directory that is there now.
func TestLockPinDirRemovedWhileWaiting(t *testing.T) {
	requireRoot(t)
	pinDir := filepath.Join(bpffsRoot, "rauha-test-relock-"+itoa(uint64(os.Getpid())))
	t.Cleanup(func() { _ = RemovePins(pinDir) })
	if err := ensurePinDir(pinDir); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockPinDir(pinDir)
	if err != nil {
		t.Fatal(err)
	}
	waiter := make(chan error, 1)
	go func() {
		u, err := lockPinDir(pinDir)
		if err == nil {
			u()
		}
		waiter <- err
	}()
	// Wait until the waiter blocks in flock: /proc/locks lists a blocked
	// request as "N: -> FLOCK ... <maj:min:inode> ...".
	fi, err := os.Stat(pinDir)
	if err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10) + " "
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		locks, _ := os.ReadFile("/proc/locks")
		if slices.ContainsFunc(strings.Split(string(locks), "\n"), func(l string) bool {
			return strings.Contains(l, "-> FLOCK") && strings.Contains(l, ino)
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second lockPinDir never waited for the lock")
		}
	}
	if err := os.Remove(pinDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(pinDir, 0o700); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := <-waiter; !errors.Is(err, errPinDirGone) {
		t.Fatalf("lock granted on a removed directory: err = %v, want errPinDirGone", err)
	}
	unlock, err = createAndLock(pinDir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
