package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/flock"
)

const bpffsRoot = "/sys/fs/bpf"

// ensurePinDir creates pinDir on a bpf filesystem, mounting bpffs at
// /sys/fs/bpf first when nothing is mounted there (hosts without systemd,
// like this project's CI VM, boot without it).
func ensurePinDir(pinDir string) error {
	if !filepath.IsAbs(pinDir) {
		return fmt.Errorf("pin directory %q must be an absolute path", pinDir)
	}
	if pinDir == bpffsRoot || strings.HasPrefix(pinDir, bpffsRoot+"/") {
		onBPF, err := isBPFFS(bpffsRoot)
		if err != nil {
			return err
		}
		if !onBPF {
			if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
				return fmt.Errorf("mount bpffs at %s (needed for pinning): %w", bpffsRoot, err)
			}
		}
	}
	if err := os.MkdirAll(pinDir, 0o700); err != nil {
		return fmt.Errorf("create pin directory: %w", err)
	}
	onBPF, err := isBPFFS(pinDir)
	if err != nil {
		return err
	}
	if !onBPF {
		return fmt.Errorf("pin directory %s is not on a bpf filesystem; mount one (mount -t bpf bpf DIR) or use a path under %s", pinDir, bpffsRoot)
	}
	return nil
}

func isBPFFS(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false, fmt.Errorf("statfs %s: %w", path, err)
	}
	return st.Type == unix.BPF_FS_MAGIC, nil
}

// errPinDirGone is what lockPinDir returns when the directory it locked was
// removed (by RemoveOrphan or Remove of another process) while it waited.
var errPinDirGone = errors.New("pin directory was removed while waiting for its lock")

// lockPinDir takes an exclusive flock on the pin directory: rauha has no
// daemon, so concurrent commands (two `rauha create`) serialise here. A
// lock on a directory that was removed meanwhile protects nothing, so the
// directory must still be the one at pinDir once the lock is held.
func lockPinDir(pinDir string) (unlock func(), err error) {
	f, err := os.Open(pinDir)
	if err != nil {
		return nil, fmt.Errorf("open pin directory for locking: %w", err)
	}
	if err := flock.Lock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock pin directory %s: %w", pinDir, err)
	}
	var held, now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &held); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat pin directory %s: %w", pinDir, err)
	}
	if err := unix.Stat(pinDir, &now); err != nil || now.Ino != held.Ino || now.Dev != held.Dev {
		f.Close()
		return nil, fmt.Errorf("%s: %w", pinDir, errPinDirGone)
	}
	return func() { f.Close() }, nil
}

// createAndLock is ensurePinDir and lockPinDir, again when the directory
// was removed between the two.
func createAndLock(pinDir string) (unlock func(), err error) {
	for range 3 {
		if err := ensurePinDir(pinDir); err != nil {
			return nil, err
		}
		unlock, err = lockPinDir(pinDir)
		if !errors.Is(err, errPinDirGone) {
			return unlock, err
		}
	}
	return nil, err
}

// RemovePins deletes pinDir and everything in it, after checking that it
// really is on a bpf filesystem: every program of both backends is
// detached and all zone state is dropped.
func RemovePins(pinDir string) error {
	onBPF, err := isBPFFS(pinDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !onBPF {
		return fmt.Errorf("refusing to remove %s: not on a bpf filesystem", pinDir)
	}
	unlock, err := lockPinDir(pinDir)
	if errors.Is(err, errPinDirGone) || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	return removePinsLocked(pinDir)
}

// removePinsLocked detaches every link pinned under pinDir, removes the
// directory and the anchor cgroup. The caller holds the lock.
func removePinsLocked(pinDir string) error {
	var errs []error
	globals, _ := filepath.Glob(filepath.Join(pinDir, "link_*"))
	members, _ := filepath.Glob(filepath.Join(membersDir(pinDir), "*", "*"))
	anchors, _ := filepath.Glob(filepath.Join(anchorDir(pinDir), "*"))
	for _, pin := range slices.Concat(globals, members, anchors) {
		errs = append(errs, detachPinned(pin))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(pinDir); err != nil {
		return fmt.Errorf("unpin %s: %w", pinDir, err)
	}
	return removeAnchorCgroup(pinDir)
}

// CgroupID returns the cgroup-v2 id of a directory in the unified
// hierarchy: its inode number, the value bpf_get_current_cgroup_id() sees.
func CgroupID(cgroupDir string) (uint64, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(cgroupDir, &sfs); err != nil {
		return 0, fmt.Errorf("statfs cgroup %s: %w", cgroupDir, err)
	}
	if sfs.Type != unix.CGROUP2_SUPER_MAGIC {
		return 0, fmt.Errorf("%s is not in the cgroup v2 (unified) hierarchy; zone membership is v2 membership", cgroupDir)
	}
	var st unix.Stat_t
	if err := unix.Stat(cgroupDir, &st); err != nil {
		return 0, fmt.Errorf("stat cgroup %s: %w", cgroupDir, err)
	}
	return st.Ino, nil
}

// detachPinned detaches a pinned link now and unpins it. Unpinning alone
// detaches too, but only once the kernel gets round to freeing the link,
// so a caller could still see the program run right after returning.
func detachPinned(pin string) error {
	l, err := link.LoadPinnedLink(pin, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open pinned link %s: %w", pin, err)
	}
	defer l.Close()
	if err := l.Detach(); err != nil && !errors.Is(err, link.ErrNotSupported) && !errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("detach %s: %w", pin, err)
	}
	if err := os.Remove(pin); err != nil {
		return fmt.Errorf("unpin %s: %w", pin, err)
	}
	return nil
}

// openPinnedMap opens the map pinned at path. It is cilium/ebpf's
// LoadPinnedMap without the read of /proc/self/fd/N that tells a map from a
// program: every name it is given was pinned by this package as a map, and
// that readlink was a quarter of opening a root's pins on every create and
// delete.
func openPinnedMap(path string) (*ebpf.Map, error) {
	fd, err := objGet(path)
	if err != nil {
		return nil, err
	}
	m, err := ebpf.NewMapFromFD(fd) // closes fd when it fails
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// objPath is union bpf_attr for BPF_OBJ_GET and BPF_OBJ_PIN.
type objPath struct {
	pathname  uint64
	bpfFD     uint32
	fileFlags uint32
	pathFD    int32
	_         uint32
}

// objGet opens the BPF object pinned at path (BPF_OBJ_GET) and returns
// its file descriptor.
func objGet(path string) (int, error) {
	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	attr := objPath{pathname: uint64(uintptr(unsafe.Pointer(name)))}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(name)
	if errno != 0 {
		return -1, &os.PathError{Op: "open pinned object", Path: path, Err: errno}
	}
	return int(fd), nil
}

// objPin pins the BPF object fd at path (BPF_OBJ_PIN).
func objPin(fd int, path string) error {
	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := objPath{pathname: uint64(uintptr(unsafe.Pointer(name))), bpfFD: uint32(fd)}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_PIN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(name)
	if errno != 0 {
		return &os.PathError{Op: "pin", Path: path, Err: errno}
	}
	return nil
}

// cgroupLink attaches the program prog to the cgroup open as cgroup with a
// BPF link (BPF_LINK_CREATE) and returns the link's file descriptor.
func cgroupLink(prog, cgroup int, attach ebpf.AttachType) (int, error) {
	// union bpf_attr for BPF_LINK_CREATE: prog_fd, target_fd, attach_type,
	// flags, and the per-type fields, zero here.
	var attr struct {
		progFD, targetFD, attachType, flags uint32
		_                                   [48]byte
	}
	attr.progFD, attr.targetFD, attr.attachType = uint32(prog), uint32(cgroup), uint32(attach)
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
