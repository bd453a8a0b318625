package libzone

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

func TestHandlesDenied(t *testing.T) {
	eperm := uint(1)
	rule := func(a configs.Action, args ...*configs.Arg) *configs.Syscall {
		return &configs.Syscall{Name: "open_by_handle_at", Action: a, ErrnoRet: &eperm, Args: args}
	}
	for _, tc := range []struct {
		name string
		s    *configs.Seccomp
		want bool
	}{
		{"no filter", nil, false},
		{"allow by default", &configs.Seccomp{DefaultAction: configs.Allow}, false},
		{"the rule guardFiles adds", &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{rule(configs.Errno)}}, true},
		{"refused by default", &configs.Seccomp{DefaultAction: configs.Errno}, true},
		{"allowed by a rule", &configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{rule(configs.Allow)}}, false},
		{"refused for some arguments only", &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{rule(configs.Errno, &configs.Arg{Index: 2, Value: 1, Op: configs.EqualTo})}}, false},
	} {
		if got := handlesDenied(&configs.Config{Seccomp: tc.s}); got != tc.want {
			t.Errorf("%s: handlesDenied = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestGuardRunning makes a zone update's mounts in a member that is a
// thread in a mount namespace of its own (private: nothing propagates back)
// and checks what a process already in it meets, and that the host's view
// is untouched.
func TestGuardRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mounts)")
	}
	dir := t.TempDir()
	for f, data := range map[string]string{"secret": "secret", "d/key": "key", "ro/file": "keep", "keep": "keep", "w/file": "w", "ro2/secret": "secret", "rob": "rob"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A hard link in the "image": found as at create and masked too.
	if err := os.Link(filepath.Join(dir, "secret"), filepath.Join(dir, "secret.bak")); err != nil {
		t.Fatal(err)
	}
	reqs := make(chan func() error)
	done := make(chan error)
	ready := make(chan error)
	tid := 0
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		err := unix.Unshare(unix.CLONE_NEWNS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		if err == nil {
			err = unix.Mount(dir, dir, "", unix.MS_BIND, "")
		}
		if err == nil {
			err = unix.Chroot(dir) // the member's root, a mount's, as after pivot_root
		}
		tid = unix.Gettid()
		ready <- err
		for f := range reqs {
			done <- f()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	defer close(reqs)
	in := func(f func() error) error { reqs <- f; return <-done }
	openIn := func(p string, flags int) error {
		return in(func() error {
			fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0644)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
	}

	m := RunningMember{ID: "t", Pid: tid, StartTime: startTime(t, tid), Config: &configs.Config{Rootfs: dir}}
	p := &zone.Policy{Filesystem: zone.Filesystem{
		ReadOnly: []string{"/ro", "/ro2"},
		// A denied file below a read_only path: its mask must be in the
		// read-only copy, not hidden under it.
		Deny: []string{"/secret", "/d", "/none/x", "/ro2/secret"},
	}}
	if _, err := guardRunning(m, &zone.Policy{}, p); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		flags int
		want  error
	}{
		{"/secret", unix.O_RDONLY, unix.EACCES},
		{"/secret.bak", unix.O_RDONLY, unix.EACCES},
		{"/d/key", unix.O_RDONLY, unix.ENOENT},
		{"/ro/file", unix.O_WRONLY, unix.EROFS},
		{"/ro/new", unix.O_WRONLY | unix.O_CREAT, unix.EROFS},
		{"/none/x", unix.O_RDONLY, unix.EACCES},
		{"/ro2/secret", unix.O_RDONLY, unix.EACCES},
		{"/ro2/new", unix.O_WRONLY | unix.O_CREAT, unix.EROFS},
		{"/keep", unix.O_RDWR, nil},
	} {
		if err := openIn(tc.path, tc.flags); !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("open %s in the member: %v, want %v", tc.path, err, tc.want)
		}
	}
	// The host sees the files as they are; the missing deny path has its
	// mount point, made on the host side as at create.
	for _, f := range []string{"secret", "secret.bak", "d/key", "none/x"} {
		if _, err := os.ReadFile(filepath.Join(dir, f)); err != nil {
			t.Errorf("host: %v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ro/file"), []byte("host"), 0o644); err != nil {
		t.Errorf("host: %v", err)
	}
	mounts := func() int {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	// Held now: a second update mounts nothing more.
	before := mounts()
	if _, err := guardRunning(m, p, p); err != nil {
		t.Fatal(err)
	}
	if after := mounts(); after != before {
		t.Errorf("a second update made %d mounts", after-before)
	}
	// writable_paths: the root becomes read-only, /w stays writable. Not
	// while a file on the root is open for writing: the member is named.
	w := &zone.Policy{Filesystem: zone.Filesystem{WritablePaths: &[]string{"/w"}}}
	fd := -1
	if err := in(func() (err error) { fd, err = unix.Open("/keep", unix.O_WRONLY|unix.O_CLOEXEC, 0); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := guardRunning(m, p, w); err == nil || !strings.Contains(err.Error(), "open for writing") {
		t.Errorf("a file open for writing on the root: %v", err)
	}
	if err := in(func() error { return unix.Close(fd) }); err != nil {
		t.Fatal(err)
	}
	if _, err := guardRunning(m, p, w); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		flags int
		want  error
	}{
		{"/keep", unix.O_WRONLY, unix.EROFS},
		{"/new", unix.O_WRONLY | unix.O_CREAT, unix.EROFS},
		{"/w/file", unix.O_WRONLY, nil},
		{"/w/new", unix.O_WRONLY | unix.O_CREAT, nil},
	} {
		if err := openIn(tc.path, tc.flags); !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("writable_paths: open %s in the member: %v, want %v", tc.path, err, tc.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("host"), 0o644); err != nil {
		t.Errorf("host: %v", err)
	}
	// An update that takes /w from writable_paths makes its copy
	// read-only.
	if _, err := guardRunning(m, w, &zone.Policy{Filesystem: zone.Filesystem{WritablePaths: &[]string{}}}); err != nil {
		t.Fatal(err)
	}
	if err := openIn("/w/file", unix.O_WRONLY); !errors.Is(err, unix.EROFS) {
		t.Errorf("writable_paths narrowed: open /w/file in the member: %v, want EROFS", err)
	}

	// A read-only bind of a file onto itself, as create makes for a
	// denied file and a read_only one alike: held for a deny path only
	// where the labels say create made it for one (and the zone denied
	// it since); else the null device goes on it.
	if err := in(func() error {
		if err := unix.Mount("/rob", "/rob", "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return unix.Mount("", "/rob", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}); err != nil {
		t.Fatal(err)
	}
	deny := &zone.Policy{Filesystem: zone.Filesystem{Deny: []string{"/rob"}}}
	labelled := m
	labelled.Config = &configs.Config{Rootfs: dir, Labels: []string{deniedFilesLabel + `=["/rob"]`}}
	if _, err := guardRunning(labelled, deny, deny); err != nil {
		t.Fatal(err)
	}
	if err := openIn("/rob", unix.O_RDONLY); err != nil {
		t.Errorf("a bind create made for the deny rule was not left alone: open /rob: %v", err)
	}
	if _, err := guardRunning(m, deny, deny); err != nil {
		t.Fatal(err)
	}
	if err := openIn("/rob", unix.O_RDONLY); !errors.Is(err, unix.EACCES) {
		t.Errorf("a read_only file's bind counted as its deny rule's: open /rob: %v, want EACCES", err)
	}

	// A pid that is no longer the member's init (reused) is left alone.
	m.StartTime++
	if _, err := guardRunning(m, &zone.Policy{}, &zone.Policy{Filesystem: zone.Filesystem{Deny: []string{"/keep"}}}); err != nil {
		t.Errorf("a reused pid: %v", err)
	}
	if err := openIn("/keep", unix.O_RDONLY); err != nil {
		t.Errorf("a reused pid was guarded: open /keep: %v", err)
	}
}
