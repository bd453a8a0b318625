package libzone

import (
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// The store hands out exactly the ids the kernel's maps hold.
func TestZoneIDsFitTheKernel(t *testing.T) {
	if zone.MaxZoneID+1 != bpf.MaxZones {
		t.Fatalf("zone.MaxZoneID is %d but the kernel's maps hold ids below %d", zone.MaxZoneID, bpf.MaxZones)
	}
}

// An event names the zone that held its id when it happened: one older
// than the zone holding the id now came from a deleted zone whose id came
// back, and keeps its number, as do its inodes.
func TestEventOfAReusedZoneID(t *testing.T) {
	created := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	web := &zone.Zone{Name: "web", ID: 7, Created: created}
	ids := zoneIDs{7: web}
	names := &eventNames{zones: ids, files: map[uint32]DenyPaths{7: {inodeKey(3, 42): "/etc/shadow"}}}
	ke := &kernelEnforcer{k: &bpf.Kernel{}}
	for _, tc := range []struct {
		at         time.Time
		zone, what string
	}{
		{created.Add(time.Millisecond), "web", "/etc/shadow"},
		{created.Add(-500 * time.Millisecond), "web", "/etc/shadow"}, // within a clock step's slack
		{created.Add(-time.Minute), "zone-7", "inode 42 on device 3"},
	} {
		ev := bpf.Event{Zone: 7, TargetZone: 7, Time: tc.at, Control: bpf.ControlFile, Dev: 3, Ino: 42}
		got, kept := names.event(ke.kernelEvent(ev))
		if !kept {
			t.Fatalf("event at %s dropped", tc.at.Sub(created))
		}
		target := ""
		if tc.zone == "web" {
			target = "web"
		}
		if got.Zone != tc.zone || got.TargetZone != target || got.Object != tc.what {
			t.Errorf("event at %s: zone %q, target zone %q, object %q; want %q, %q, %q",
				tc.at.Sub(created), got.Zone, got.TargetZone, got.Object, tc.zone, target, tc.what)
		}
	}
}

// An error of the fallback's mounts (EXDEV, EBUSY, ENOENT) is kept only
// when a path it names is, or is below, a deny or read_only path of the
// zone, and is named by that path.
func TestMountErrorEvents(t *testing.T) {
	created := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	z := &zone.Zone{Name: "web", ID: 7, Created: created}
	z.Policy.Filesystem.Deny = []string{"/etc/shadow", "/run/sock/"}
	z.Policy.Filesystem.ReadOnly = []string{"/srv/ro"}
	names := &eventNames{zones: zoneIDs{7: z}}
	ke := &kernelEnforcer{k: &bpf.Kernel{}}
	for _, tc := range []struct {
		op         bpf.FileOp
		errno      syscall.Errno
		path, next string
		want       string // "": dropped
	}{
		{bpf.FileOpLink, syscall.EXDEV, "/etc/shadow", "/opt/shadow.new", "link /etc/shadow (invalid cross-device link)"},
		{bpf.FileOpRename, syscall.EXDEV, "/tmp/x", "/srv/ro/x", "rename /srv/ro/x (invalid cross-device link)"},
		{bpf.FileOpRename, syscall.EBUSY, "/etc/shadow", "/tmp/y", "rename /etc/shadow (device or resource busy)"},
		{bpf.FileOpUnlink, syscall.EBUSY, "/etc//shadow", "", "unlink /etc/shadow (device or resource busy)"},
		{bpf.FileOpRmdir, syscall.EBUSY, "/srv/ro", "", "rmdir /srv/ro (device or resource busy)"},
		{bpf.FileOpUnixConnect, syscall.ENOENT, "/run/sock/s", "", "unix connect /run/sock/s (no such file or directory)"},
		// Not the zone's: runc's bind mount of /etc/hosts, nscd's socket,
		// a name that only starts like a rule, a path not resolved.
		{bpf.FileOpUnlink, syscall.EBUSY, "/etc/hosts", "", ""},
		{bpf.FileOpUnixConnect, syscall.ENOENT, "/var/run/nscd/socket", "", ""},
		{bpf.FileOpUnlink, syscall.EBUSY, "/etc/shadow-", "", ""},
		{bpf.FileOpRename, syscall.EBUSY, "", "/tmp/y", ""},
		{bpf.FileOpUnlink, syscall.EBUSY, "etc/shadow", "", ""},
	} {
		ev := bpf.Event{Zone: 7, Time: created.Add(time.Second), Control: bpf.ControlFile, Hook: bpf.HookSysExit,
			Verdict: bpf.VerdictObserved, Errno: tc.errno, Op: tc.op, Path: tc.path, NewPath: tc.next}
		got, kept := names.event(ke.kernelEvent(ev))
		switch {
		case tc.want == "" && kept:
			t.Errorf("%s %q %q (%v): kept as %q, want it dropped", tc.op, tc.path, tc.next, tc.errno, got.Object)
		case tc.want != "" && !kept:
			t.Errorf("%s %q %q (%v): dropped, want %q", tc.op, tc.path, tc.next, tc.errno, tc.want)
		case kept && (got.Object != tc.want || got.Zone != "web"):
			t.Errorf("%s %q %q (%v): zone %q, object %q; want web, %q", tc.op, tc.path, tc.next, tc.errno, got.Zone, got.Object, tc.want)
		}
	}
	// A zone whose id is reused since: the rules of the new zone do not
	// judge the old zone's events.
	ev := bpf.Event{Zone: 7, Time: created.Add(-time.Minute), Control: bpf.ControlFile, Hook: bpf.HookSysExit,
		Verdict: bpf.VerdictObserved, Errno: syscall.EBUSY, Op: bpf.FileOpUnlink, Path: "/etc/shadow"}
	if got, kept := names.event(ke.kernelEvent(ev)); kept {
		t.Errorf("an event older than the zone holding its id was kept as %q", got.Object)
	}
}

// A drain that finds no kernel events writes nothing: bbolt gives every
// committed write transaction, empty or not, a new transaction id, so the
// database's id must not move.
func TestEmptyDrainCommitsNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: installs the kernel programs of a test root")
	}
	root := t.TempDir()
	e, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	p, err := zone.Preset("standard")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateZone("drain", p, "preset:standard"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The root's last zone: its programs, pins and anchor cgroup go too.
		if err := e.DeleteZone("drain", false); err != nil {
			t.Errorf("remove the test zone and its kernel programs: %v", err)
		}
	})
	if _, installed := bpf.InstalledBackend(bpf.PinDirFor(root)); !installed {
		t.Fatal("no kernel programs installed: a drain would not reach the kernel")
	}
	before := boltTxID(t, e.Store().Path())
	for range 3 {
		if _, err := e.DrainEvents(); err != nil {
			t.Fatal(err)
		}
	}
	if after := boltTxID(t, e.Store().Path()); after != before {
		t.Errorf("three drains without events moved the database from transaction %d to %d", before, after)
	}
}

func boltTxID(t *testing.T, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// A signal event says which route it took: kill(2) and its kin name the
// target pid, a file's owner signal says so, the observer's
// pidfd_send_signal names the pidfd.
func TestSignalObject(t *testing.T) {
	for _, tc := range []struct {
		ev   bpf.Event
		want string
	}{
		{bpf.Event{Hook: bpf.HookLSMTaskKill, Arg: 15, TargetPid: 42}, "signal 15 to pid 42"},
		{bpf.Event{Hook: bpf.HookSysExit, Arg: 9, TargetPid: 42}, "signal 9 to pid 42"},
		{bpf.Event{Hook: bpf.HookLSMFileSendSigiotask, Arg: 29, TargetPid: 42}, "signal 29 to pid 42 (file owner)"},
		{bpf.Event{Hook: bpf.HookSysExit, Arg: 15, Path: "[pidfd]"}, "signal 15 to pidfd [pidfd]"},
		{bpf.Event{Hook: bpf.HookLSMFileFcntl}, "file owner (F_SETOWN) not recorded"},
	} {
		if got := signalObject(tc.ev); got != tc.want {
			t.Errorf("signalObject(%+v) = %q, want %q", tc.ev, got, tc.want)
		}
	}
}

// An io_uring request's denial names the request and the path it named.
func TestIoUringEventObject(t *testing.T) {
	names := &eventNames{zones: zoneIDs{}}
	ke := &kernelEnforcer{k: &bpf.Kernel{}}
	for _, tc := range []struct {
		ev   bpf.Event
		want string
	}{
		{bpf.Event{Control: bpf.ControlFile, IoUringOp: 18, Path: "/etc/shadow", Errno: syscall.EACCES}, "io_uring openat /etc/shadow (permission denied)"},
		{bpf.Event{Control: bpf.ControlFile, IoUringOp: 35, Path: "/a", NewPath: "/b", Errno: syscall.EROFS}, "io_uring renameat /a -> /b (read-only file system)"},
		{bpf.Event{Control: bpf.ControlFile, IoUringOp: 36, Errno: syscall.EROFS}, "io_uring unlinkat (path not known) (read-only file system)"},
		{bpf.Event{Control: bpf.ControlFile, IoUringOp: 99, Path: "/x", Errno: syscall.EPERM}, "io_uring op 99 /x (operation not permitted)"},
		{bpf.Event{Control: bpf.ControlEgress, IoUringOp: 16, Addr: netip.MustParseAddrPort("10.0.0.1:80"), Errno: syscall.EACCES}, "io_uring connect 10.0.0.1:80 (permission denied)"},
	} {
		tc.ev.Hook = bpf.HookIoUring
		if got, ok := names.event(ke.kernelEvent(tc.ev)); !ok || got.Object != tc.want {
			t.Errorf("object = %q (kept %v), want %q", got.Object, ok, tc.want)
		}
	}
}
