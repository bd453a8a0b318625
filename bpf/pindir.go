package bpf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultRoot is rauha's state root when --root is not given; its pin
// directory is DefaultPinDir.
const DefaultRoot = "/run/rauha"

// DefaultPinDir is where the default root's pins live.
const DefaultPinDir = bpffsRoot + "/rauha"

// PinDirFor is the pin directory of a state root, and the only place that
// decides it. Zone ids are allocated per root, so every root other than the
// default gets its own directory, named after the first 6 bytes of the
// sha256 of its absolute path: two roots never share a map.
func PinDirFor(root string) string {
	if root == DefaultRoot {
		return DefaultPinDir
	}
	sum := sha256.Sum256([]byte(root))
	return DefaultPinDir + "-" + hex.EncodeToString(sum[:6])
}

// A pin directory records what it was installed for in two symbolic links
// (bpffs holds nothing but BPF objects, directories and symbolic links):
//
//	root   → the state root whose zones it enforces, so that a reconcile of
//	         any root can tell pins whose root is gone;
//	object → "sha256:<hex>" of the BPF object its programs were loaded from,
//	         so that a newer rauha sees that its programs are not these.
//
// Reading one is a readlink: no BPF call.
const (
	rootRecord   = "root"
	objectRecord = "object"
)

func objectTag(hash string) string { return "sha256:" + hash }

// installedObject is the object hash pinDir records ("" when none: nothing
// installed yet, or installed by a rauha that did not record it).
func installedObject(pinDir string) string {
	tag, err := os.Readlink(filepath.Join(pinDir, objectRecord))
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(tag, "sha256:")
}

// RecordedRoot is the state root pinDir records, "" when it records none
// (made by a rauha before this record existed).
func RecordedRoot(pinDir string) string {
	root, err := os.Readlink(filepath.Join(pinDir, rootRecord))
	if err != nil {
		if filepath.Clean(pinDir) == DefaultPinDir {
			return DefaultRoot // the one pin directory whose root its name tells
		}
		return ""
	}
	return root
}

// record writes the root and object records; object goes last, so that a
// pin directory only claims an object once everything of it is in place.
// Each is replaced in one rename: a reader sees the old or the new one.
func record(pinDir, root, hash string) error {
	if root != "" {
		if err := setRecord(pinDir, rootRecord, root); err != nil {
			return err
		}
	}
	return setRecord(pinDir, objectRecord, objectTag(hash))
}

func setRecord(pinDir, name, value string) error {
	path := filepath.Join(pinDir, name)
	if cur, err := os.Readlink(path); err == nil && cur == value {
		return nil
	}
	// bpffs refuses names with a dot.
	tmp := path + "_new"
	_ = os.Remove(tmp)
	if err := os.Symlink(value, tmp); err != nil {
		return fmt.Errorf("record %s in %s: %w", name, pinDir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("record %s in %s: %w", name, pinDir, err)
	}
	return nil
}

// PinDirs lists rauha's pin directories on this host: DefaultPinDir and
// every DefaultPinDir-<hash>.
func PinDirs() []string {
	dirs, _ := filepath.Glob(DefaultPinDir + "-*")
	if exists(DefaultPinDir) {
		dirs = append([]string{DefaultPinDir}, dirs...)
	}
	return dirs
}

// RemoveOrphan removes pinDir, with every link in it (the host-wide
// observer among them) and its anchor cgroup, when the root it records is
// gone(root). gone is asked again under the pin directory's lock, which a
// create of that root takes after it has made its state directory, so a
// root that comes back meanwhile keeps its pins. A pin directory that
// records no root is left alone: nothing tells whose it is.
func RemoveOrphan(pinDir string, gone func(root string) bool) (removed bool, err error) {
	root := RecordedRoot(pinDir)
	if root == "" || !gone(root) {
		return false, nil
	}
	unlock, err := lockPinDir(pinDir)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errPinDirGone) {
		return false, nil // removed by someone else
	}
	if err != nil {
		return false, err
	}
	defer unlock()
	if root = RecordedRoot(pinDir); root == "" || !gone(root) {
		return false, nil
	}
	if err := removePinsLocked(pinDir); err != nil {
		return false, fmt.Errorf("remove the pins of %s (its root %s is gone): %w", pinDir, root, err)
	}
	return true, nil
}
