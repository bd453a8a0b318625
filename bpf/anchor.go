package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Both backends attach egress programs to every member's cgroup (the packet
// program; the fallback also connect and sendmsg). The kernel keeps one
// static key per cgroup attach type, enabled while any
// cgroup has a program of that type: the first attach and the last detach
// patch kernel text, 0.1-0.4 ms a call on this project's host (perf trace),
// which a container alone in its root paid once per program at create and
// at delete. The anchor, an empty cgroup of the pin directory that
// holds one link of each egress program, keeps those keys enabled while the
// programs are installed. No task runs in it, so its programs never run (a
// task moved into it would be an unregistered member: egress fails closed).

// UnifiedMountpoint is where the cgroup v2 hierarchy is mounted:
// /sys/fs/cgroup/unified on a hybrid host, else /sys/fs/cgroup.
func UnifiedMountpoint() string {
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err == nil {
		return "/sys/fs/cgroup/unified"
	}
	return "/sys/fs/cgroup"
}

// anchorCgroup is the anchor's cgroup directory, named after the pin
// directory so that every root has its own.
func anchorCgroup(pinDir string) string {
	return filepath.Join(UnifiedMountpoint(), filepath.Base(pinDir)+".anchor")
}

func anchorDir(pinDir string) string { return filepath.Join(pinDir, "anchor") }

// attachAnchor creates the anchor cgroup and links every per-member program
// to it, unless already done. On a host without a cgroup v2 hierarchy
// there is nothing to anchor (and no member can be attached either).
func (k *Kernel) attachAnchor() error {
	if _, err := CgroupID(UnifiedMountpoint()); err != nil {
		return nil // no cgroup v2 hierarchy: never create a directory there
	}
	sweepAnchors(filepath.Dir(k.pinDir))
	cg := anchorCgroup(k.pinDir)
	if err := os.Mkdir(cg, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create the anchor cgroup %s: %w", cg, err)
	}
	// A failure leaves what was pinned for removeAnchor.
	_, err := k.linkCgroup(cg, anchorDir(k.pinDir))
	return err
}

// sweepAnchors removes the anchor cgroups of pin directories under bpffs
// that are gone: pins removed by hand, or lost with a reboot while the
// cgroup hierarchy stayed. rmdir removes only an empty cgroup, and an
// anchor whose links were unpinned has none left.
func sweepAnchors(bpffs string) {
	anchors, _ := filepath.Glob(filepath.Join(UnifiedMountpoint(), "rauha*.anchor"))
	for _, cg := range anchors {
		if !exists(filepath.Join(bpffs, strings.TrimSuffix(filepath.Base(cg), ".anchor"))) {
			_ = os.Remove(cg)
		}
	}
}

// removeAnchor detaches the anchor's links and removes its cgroup, after a
// failed install.
func removeAnchor(pinDir string) error {
	var errs []error
	pins, _ := filepath.Glob(filepath.Join(anchorDir(pinDir), "*"))
	for _, pin := range pins {
		errs = append(errs, detachPinned(pin))
	}
	if err := os.Remove(anchorDir(pinDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, removeAnchorCgroup(pinDir))...)
}

// removeAnchorCgroup removes the anchor cgroup once its links are gone.
func removeAnchorCgroup(pinDir string) error {
	if err := os.Remove(anchorCgroup(pinDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the anchor cgroup: %w", err)
	}
	return nil
}
