package bpf

import "testing"

// An LSM file/exec denial and the observer's event for the same failed
// syscall are one denial; the observer's events of other threads, or of a
// syscall no hook denied (Landlock's allow-lists), are kept.
func TestLSMDenialsDropsTheObserverTwin(t *testing.T) {
	ev := func(hook Hook, c Control, pid uint32, ret int32) *rauhaEvent {
		return &rauhaEvent{Hook: uint16(hook), Control: uint16(c), Pid: pid, Tgid: pid / 100 * 100, Ret: ret}
	}
	d := lsmDenials{}
	steps := []struct {
		name string
		ev   *rauhaEvent
		dup  bool
	}{
		{"lsm open denial", ev(HookLSMFileOpen, ControlFile, 7, -13), false},
		{"observer of another thread", ev(HookSysExit, ControlFile, 8, -13), false},
		{"observer of the same open", ev(HookSysExit, ControlFile, 7, -13), true},
		{"observer of a later Landlock denial", ev(HookSysExit, ControlFile, 7, -13), false},
		{"lsm audit (allowed)", ev(HookLSMFileOpen, ControlFile, 7, 0), false},
		{"observer after an audit", ev(HookSysExit, ControlFile, 7, -13), false},
		{"lsm exec denial", ev(HookLSMBprmCheck, ControlExec, 9, -13), false},
		{"observer of the same exec", ev(HookSysExit, ControlExec, 9, -13), true},
		{"lsm open denial again", ev(HookLSMFileOpen, ControlFile, 10, -13), false},
		{"observer exec of that thread is another syscall", ev(HookSysExit, ControlExec, 10, -13), false},
		{"signal observer events are not file events", ev(HookSysExit, ControlSignal, 10, -1), false},
		// An io_uring request denied in an io-wq worker (pid 201), its
		// completion posted by the submitting thread (pid 200).
		{"lsm open denial in a worker", ev(HookLSMFileOpen, ControlFile, 201, -13), false},
		{"io_uring completion of that request", ev(HookIoUring, ControlFile, 200, -13), true},
		{"io_uring completion no hook denied (Landlock)", ev(HookIoUring, ControlFile, 200, -13), false},
		{"lsm open denial of another process", ev(HookLSMFileOpen, ControlFile, 301, -13), false},
		{"is not the twin of its denial", ev(HookIoUring, ControlFile, 200, -13), false},
		{"which its own completion is", ev(HookIoUring, ControlFile, 300, -13), true},
	}
	for _, s := range steps {
		if got := d.duplicate(s.ev); got != s.dup {
			t.Errorf("%s: duplicate = %v, want %v", s.name, got, s.dup)
		}
	}
}

// An observed error of the fallback's mounts carries its operation in arg;
// a link or rename holds the old name in the first half of the path and
// the new one in the second.
func TestDecodeFileOp(t *testing.T) {
	raw := func(op FileOp, paths ...string) *rauhaEvent {
		r := &rauhaEvent{Control: uint16(ControlFile), Hook: uint16(HookSysExit), Verdict: uint8(VerdictObserved), Ret: -16, Arg: uint64(op)}
		for i, p := range paths {
			for j := range len(p) {
				r.Path[i*len(r.Path)/2+j] = int8(p[j])
			}
		}
		return r
	}
	long := "/var/lib/a-name-longer-than-half-of-the-path-field-of-the-event/" +
		"which-is-two-hundred-and-fifty-six-bytes-so-this-one-spans-both-halves"
	for _, tc := range []struct {
		r             *rauhaEvent
		op            FileOp
		path, newPath string
	}{
		{raw(FileOpRename, "/etc/shadow", "/opt/moved"), FileOpRename, "/etc/shadow", "/opt/moved"},
		{raw(FileOpLink, "", "/srv/ro/x"), FileOpLink, "", "/srv/ro/x"},
		{raw(FileOpUnlink, long), FileOpUnlink, long, ""},
		{raw(FileOpUnixConnect, "/run/sock/s"), FileOpUnixConnect, "/run/sock/s", ""},
		{raw(0, "/etc/shadow"), 0, "/etc/shadow", ""}, // an EROFS, EACCES or EPERM
	} {
		e := decodeEvent(tc.r, newBootClock())
		if e.Op != tc.op || e.Path != tc.path || e.NewPath != tc.newPath || e.Arg != 0 {
			t.Errorf("decode %v: op %v, path %q, new path %q, arg %d; want %v, %q, %q, 0", tc.op, e.Op, e.Path, e.NewPath, e.Arg, tc.op, tc.path, tc.newPath)
		}
	}
}
