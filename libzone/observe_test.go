package libzone

import (
	"testing"
	"time"

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
	files := map[uint32]fileDenyPaths{7: {inodeKey(3, 42): "/etc/shadow"}}
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
		got := ke.zoneEvent(ev, ids, nil, files)
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
