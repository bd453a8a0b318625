package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Control is a policy area: the index of the counters and Event.Control.
type Control uint16

const (
	ControlFile       = Control(rauhaControlCONTROL_FILE)
	ControlExec       = Control(rauhaControlCONTROL_EXEC)
	ControlSignal     = Control(rauhaControlCONTROL_SIGNAL)
	ControlPtrace     = Control(rauhaControlCONTROL_PTRACE)
	ControlEgress     = Control(rauhaControlCONTROL_EGRESS)
	ControlCapability = Control(rauhaControlCONTROL_CAPABILITY)
	ControlCgroup     = Control(rauhaControlCONTROL_CGROUP)
	ControlIngress    = Control(rauhaControlCONTROL_INGRESS)
	NumControls       = int(rauhaControlNUM_CONTROLS)
)

var controlNames = [NumControls]string{"file", "exec", "signal", "ptrace", "egress", "capability", "cgroup", "ingress"}

func (c Control) String() string {
	if int(c) < NumControls {
		return controlNames[c]
	}
	return fmt.Sprintf("control(%d)", uint16(c))
}

// Hook is the program that reported an event.
type Hook uint16

const (
	HookConnect4         = Hook(rauhaHookHOOK_CONNECT4)
	HookConnect6         = Hook(rauhaHookHOOK_CONNECT6)
	HookSendmsg4         = Hook(rauhaHookHOOK_SENDMSG4)
	HookSendmsg6         = Hook(rauhaHookHOOK_SENDMSG6)
	HookSysExit          = Hook(rauhaHookHOOK_SYS_EXIT)
	HookLSMFileOpen      = Hook(rauhaHookHOOK_LSM_FILE_OPEN)
	HookLSMBprmCheck     = Hook(rauhaHookHOOK_LSM_BPRM_CHECK)
	HookLSMPtrace        = Hook(rauhaHookHOOK_LSM_PTRACE)
	HookLSMTaskKill      = Hook(rauhaHookHOOK_LSM_TASK_KILL)
	HookLSMSocketConnect = Hook(rauhaHookHOOK_LSM_SOCKET_CONNECT)
	HookLSMSocketSendmsg = Hook(rauhaHookHOOK_LSM_SOCKET_SENDMSG)
	HookLSMCapable       = Hook(rauhaHookHOOK_LSM_CAPABLE)
	HookLSMMmapFile      = Hook(rauhaHookHOOK_LSM_MMAP_FILE)
	HookLSMFileMprotect  = Hook(rauhaHookHOOK_LSM_FILE_MPROTECT)
	HookSkbEgress        = Hook(rauhaHookHOOK_SKB_EGRESS)
	// A signal a file sends to the owner a zone task set (SIGIO, F_SETSIG,
	// SIGURG); the event names the task that set the owner.
	HookLSMFileSendSigiotask = Hook(rauhaHookHOOK_LSM_FILE_SEND_SIGIOTASK)
	// A zone task setting a file's owner when no record of it can be kept.
	HookLSMFileFcntl = Hook(rauhaHookHOOK_LSM_FILE_FCNTL)
	HookLSMFileIoctl = Hook(rauhaHookHOOK_LSM_FILE_IOCTL)
	HookSkbIngress   = Hook(rauhaHookHOOK_SKB_INGRESS)
	// File rules beyond open and exec (lsmfile.bpf.h).
	HookLSMInodeSetattr     = Hook(rauhaHookHOOK_LSM_INODE_SETATTR)
	HookLSMInodeSetxattr    = Hook(rauhaHookHOOK_LSM_INODE_SETXATTR)
	HookLSMInodeRemovexattr = Hook(rauhaHookHOOK_LSM_INODE_REMOVEXATTR)
	HookLSMInodeLink        = Hook(rauhaHookHOOK_LSM_INODE_LINK)
	HookLSMInodeRename      = Hook(rauhaHookHOOK_LSM_INODE_RENAME)
	HookLSMUnixConnect      = Hook(rauhaHookHOOK_LSM_UNIX_CONNECT)
	HookLSMUnixSend         = Hook(rauhaHookHOOK_LSM_UNIX_SEND)
	HookLSMInodeSetACL      = Hook(rauhaHookHOOK_LSM_INODE_SET_ACL)
	HookLSMInodeRemoveACL   = Hook(rauhaHookHOOK_LSM_INODE_REMOVE_ACL)
	HookLSMInodeUnlink      = Hook(rauhaHookHOOK_LSM_INODE_UNLINK)
	HookLSMInodeRmdir       = Hook(rauhaHookHOOK_LSM_INODE_RMDIR)
	// The path hooks: the checks above walking up across mounts, and new
	// entries inside denied and read_only trees and at denied names.
	HookLSMPathChmod    = Hook(rauhaHookHOOK_LSM_PATH_CHMOD)
	HookLSMPathChown    = Hook(rauhaHookHOOK_LSM_PATH_CHOWN)
	HookLSMPathTruncate = Hook(rauhaHookHOOK_LSM_PATH_TRUNCATE)
	HookLSMPathUnlink   = Hook(rauhaHookHOOK_LSM_PATH_UNLINK)
	HookLSMPathRmdir    = Hook(rauhaHookHOOK_LSM_PATH_RMDIR)
	HookLSMPathMknod    = Hook(rauhaHookHOOK_LSM_PATH_MKNOD)
	HookLSMPathMkdir    = Hook(rauhaHookHOOK_LSM_PATH_MKDIR)
	HookLSMPathSymlink  = Hook(rauhaHookHOOK_LSM_PATH_SYMLINK)
	HookLSMPathLink     = Hook(rauhaHookHOOK_LSM_PATH_LINK)
	HookLSMPathRename   = Hook(rauhaHookHOOK_LSM_PATH_RENAME)
	// The completion of a zone task's io_uring request that failed as the
	// observer's syscalls do (iouring.bpf.h); Event.IoUringOp names it.
	HookIoUring = Hook(rauhaHookHOOK_IO_URING)
)

var hookNames = map[Hook]string{
	HookConnect4: "cgroup/connect4", HookConnect6: "cgroup/connect6",
	HookSendmsg4: "cgroup/sendmsg4", HookSendmsg6: "cgroup/sendmsg6",
	HookSysExit: "tp_btf/sys_exit", HookLSMFileOpen: "lsm/file_open",
	HookLSMBprmCheck: "lsm/bprm_check_security", HookLSMPtrace: "lsm/ptrace_access_check",
	HookLSMTaskKill: "lsm/task_kill", HookLSMSocketConnect: "lsm/socket_connect",
	HookLSMSocketSendmsg: "lsm/socket_sendmsg", HookLSMCapable: "lsm/capable",
	HookLSMMmapFile: "lsm/mmap_file", HookLSMFileMprotect: "lsm/file_mprotect",
	HookSkbEgress: "cgroup_skb/egress", HookLSMFileSendSigiotask: "lsm/file_send_sigiotask",
	HookLSMFileFcntl: "lsm/file_fcntl", HookLSMFileIoctl: "lsm/file_ioctl",
	HookSkbIngress:      "cgroup_skb/ingress",
	HookLSMInodeSetattr: "lsm/inode_setattr", HookLSMInodeSetxattr: "lsm/inode_setxattr",
	HookLSMInodeRemovexattr: "lsm/inode_removexattr", HookLSMInodeLink: "lsm/inode_link",
	HookLSMInodeRename: "lsm/inode_rename", HookLSMUnixConnect: "lsm/unix_stream_connect",
	HookLSMUnixSend: "lsm/unix_may_send", HookLSMInodeSetACL: "lsm/inode_set_acl",
	HookLSMInodeRemoveACL: "lsm/inode_remove_acl", HookLSMInodeUnlink: "lsm/inode_unlink",
	HookLSMInodeRmdir: "lsm/inode_rmdir", HookLSMPathChmod: "lsm/path_chmod",
	HookLSMPathChown: "lsm/path_chown", HookLSMPathTruncate: "lsm/path_truncate",
	HookLSMPathUnlink: "lsm/path_unlink", HookLSMPathRmdir: "lsm/path_rmdir",
	HookLSMPathMknod: "lsm/path_mknod", HookLSMPathMkdir: "lsm/path_mkdir",
	HookLSMPathSymlink: "lsm/path_symlink", HookLSMPathLink: "lsm/path_link",
	HookLSMPathRename: "lsm/path_rename", HookIoUring: "tp_btf/io_uring_complete",
}

func (h Hook) String() string {
	if s, ok := hookNames[h]; ok {
		return s
	}
	return fmt.Sprintf("hook(%d)", uint16(h))
}

// FileOp is what a task tried when the observer reports an error the
// fallback's mounts give for file rules (EXDEV, EBUSY, ENOENT).
type FileOp uint8

const (
	FileOpLink        = FileOp(rauhaFileOpFILE_OP_LINK)
	FileOpRename      = FileOp(rauhaFileOpFILE_OP_RENAME)
	FileOpUnlink      = FileOp(rauhaFileOpFILE_OP_UNLINK)
	FileOpRmdir       = FileOp(rauhaFileOpFILE_OP_RMDIR)
	FileOpUnixConnect = FileOp(rauhaFileOpFILE_OP_UNIX_CONNECT)
)

// String names the operation as the bpf-lsm file hooks' events do.
func (o FileOp) String() string {
	switch o {
	case FileOpLink:
		return "link"
	case FileOpRename:
		return "rename"
	case FileOpUnlink:
		return "unlink"
	case FileOpRmdir:
		return "rmdir"
	case FileOpUnixConnect:
		return "unix connect"
	}
	return fmt.Sprintf("file op %d", uint8(o))
}

// Verdict says what happened to the operation an event reports.
type Verdict uint8

const (
	// VerdictDenied: the zone's policy denied it; the task got Errno.
	VerdictDenied = Verdict(rauhaVerdictVERDICT_DENIED)
	// VerdictAudited: the policy would deny it; the zone is in audit mode.
	VerdictAudited = Verdict(rauhaVerdictVERDICT_AUDITED)
	// VerdictObserved: a syscall of a zone task failed with EACCES or EPERM
	// (fallback backend; Landlock, or plain permissions, denied it).
	VerdictObserved = Verdict(rauhaVerdictVERDICT_OBSERVED)
)

func (v Verdict) String() string {
	switch v {
	case VerdictDenied:
		return "denied"
	case VerdictAudited:
		return "audited"
	case VerdictObserved:
		return "observed"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Event is one report from the kernel programs.
type Event struct {
	Time     time.Time
	Zone     uint32
	Control  Control
	Hook     Hook
	Verdict  Verdict
	Errno    syscall.Errno // what the task got; 0 when it was allowed
	Pid      uint32        // thread id, initial pid namespace (HookLSMFileSendSigiotask: of the task that set the file's owner)
	Tgid     uint32
	UID      uint32
	Comm     string
	CgroupID uint64
	// Control specific; zero when not applicable.
	Path       string         // observed open/exec: path argument; cgroup: file name; observed pidfd_send_signal: the pidfd's file name
	Dev, Ino   uint64         // file/exec (bpf-lsm): the inode (Dev as in stat(2))
	Arg        uint64         // signal number, ptrace mode/request, capability, cgroup id
	TargetPid  int32          // signal/ptrace target
	TargetZone uint32         // signal/ptrace/cgroup target zone (bpf-lsm); egress/ingress: the peer member's zone
	Addr       netip.AddrPort // egress destination; ingress: source
	// Packet programs (HookSkbEgress, HookSkbIngress): the IP protocol;
	// whether the packet was source-routed or could not be parsed, so its
	// destination was not judged; whether it went to another zone's member
	// from a source address not registered to the sender's zone.
	Proto        uint8
	SourceRouted bool
	Unregistered bool
	Syscall      uint32 // observer: syscall number (of the kernel's architecture)
	// HookIoUring: the request's IORING_OP_* opcode. Path is the path it
	// named.
	IoUringOp uint8
	// Op: an observed file error the fallback's mounts give (0: another
	// event). Path is then absolute, or empty when the observer could not
	// resolve it.
	Op FileOp
	// NewPath: the new name of a link or rename (Op FileOpLink or
	// FileOpRename, or an io_uring renameat or linkat), whose Path is the
	// old one.
	NewPath string
}

// EventsPending reports whether the ring buffer holds events no drain has
// taken yet, reading none: a ring buffer's fd polls readable while its
// producer is ahead of its consumer. One poll(2): a reader (an epoll
// instance and the ring's mappings) costs a delete with nothing pending
// far more.
func (k *Kernel) EventsPending() (bool, error) {
	fds := []unix.PollFd{{Fd: int32(k.maps.Events.FD()), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		} else if err != nil {
			return false, fmt.Errorf("poll the event ring buffer: %w", err)
		}
		return n > 0 && fds[0].Revents&unix.POLLIN != 0, nil
	}
}

// DrainEvents returns up to max events already in the ring buffer, oldest
// first. It never waits for new ones, and stops early at deadline (zero:
// no deadline). Consumed events are gone for every reader, so drains of
// one pin directory must not run concurrently (rauha serialises them with
// a lock file in its state root).
func (k *Kernel) DrainEvents(max int, deadline time.Time) ([]Event, error) {
	rd, err := ringbuf.NewReader(k.maps.Events)
	if err != nil {
		return nil, fmt.Errorf("open event ring buffer: %w", err)
	}
	defer rd.Close()
	// A deadline in the past makes Read return what is there, then stop.
	rd.SetDeadline(time.Unix(1, 0))

	clock := newBootClock()
	lsmDenied := lsmDenials{}
	var out []Event
	var rec ringbuf.Record
	for len(out) < max && (deadline.IsZero() || time.Now().Before(deadline)) {
		err := rd.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("read event ring buffer: %w", err)
		}
		var raw rauhaEvent
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &raw); err != nil {
			return out, fmt.Errorf("decode event of %d bytes: %w", len(rec.RawSample), err)
		}
		if k.lsm && observer(Hook(raw.Hook)) && !observedOnLSM(Control(raw.Control)) {
			// The LSM hook that denied it sent its own event.
			continue
		}
		if k.lsm && lsmDenied.duplicate(&raw) {
			continue
		}
		ev := decodeEvent(&raw, clock)
		if tail := rec.RawSample[binary.Size(raw):]; ev.Op != 0 && len(tail) > 0 {
			// A mount error whose paths did not fit in the event
			// (struct long_event): they follow it.
			var lp rauhaLongPaths
			if err := binary.Read(bytes.NewReader(tail), binary.NativeEndian, &lp); err != nil {
				return out, fmt.Errorf("decode the paths of an event of %d bytes: %w", len(rec.RawSample), err)
			}
			ev.Path, ev.NewPath = cString(lp.Path[:]), cString(lp.NewPath[:])
		}
		out = append(out, ev)
	}
	return out, nil
}

// The io_uring opcodes whose path holds two halves (iouring.bpf.h).
const (
	ioringOpRenameat = 35
	ioringOpLinkat   = 39
)

// observer reports the hooks that report failures of what a task asked
// for, whoever denied it.
func observer(h Hook) bool { return h == HookSysExit || h == HookIoUring }

// observedOnLSM reports the controls whose observer events the bpf-lsm
// backend keeps: file and exec (Landlock's allow-lists, which no hook sees)
// and capability (bpf(2) denied by seccomp; lsm/capable never runs for it).
func observedOnLSM(c Control) bool {
	return c == ControlFile || c == ControlExec || c == ControlCapability
}

// lsmDenials remembers, per thread, the file or exec denial an LSM hook has
// just reported, so that the observer's event for the same failed syscall,
// which follows it in the ring buffer, is dropped. The observer still runs
// on bpf-lsm for Landlock's denials of the allow-lists, which no hook sees.
// An io_uring request may run in another thread of the process than the
// one that posts its completion (an io-wq worker): its completion drops a
// denial of any thread of the process, its own thread's first. A pair split
// across two drains is reported twice.
type lsmDenials map[uint32]lsmDenial

type lsmDenial struct {
	control Control
	tgid    uint32
}

func (d lsmDenials) duplicate(r *rauhaEvent) bool {
	c := Control(r.Control)
	if c != ControlFile && c != ControlExec {
		return false
	}
	switch Hook(r.Hook) {
	case HookSysExit:
		prev, ok := d[r.Pid]
		delete(d, r.Pid)
		return ok && prev.control == c
	case HookIoUring:
		if prev, ok := d[r.Pid]; ok && prev.control == c {
			delete(d, r.Pid)
			return true
		}
		for pid, prev := range d {
			if prev.tgid == r.Tgid && prev.control == c {
				delete(d, pid)
				return true
			}
		}
		return false
	}
	if r.Ret != 0 {
		d[r.Pid] = lsmDenial{control: c, tgid: r.Tgid}
	}
	return false
}

func decodeEvent(r *rauhaEvent, clock bootClock) Event {
	e := Event{
		Time:       clock.wall(r.TsNs),
		Zone:       r.Zone,
		Control:    Control(r.Control),
		Hook:       Hook(r.Hook),
		Verdict:    Verdict(r.Verdict),
		Errno:      syscall.Errno(-r.Ret),
		Pid:        r.Pid,
		Tgid:       r.Tgid,
		UID:        r.Uid,
		Comm:       cString(r.Comm[:]),
		CgroupID:   r.Cgid,
		Path:       cString(r.Path[:]),
		Arg:        r.Arg,
		TargetPid:  r.TargetPid,
		TargetZone: r.TargetZone,
		Syscall:    r.Syscall,
	}
	if e.Hook == HookIoUring {
		e.IoUringOp, e.Syscall = uint8(r.Syscall), 0
		if e.IoUringOp == ioringOpRenameat || e.IoUringOp == ioringOpLinkat {
			e.Path, e.NewPath = twoPaths(r.Path[:])
		}
	}
	switch e.Control {
	case ControlFile, ControlExec:
		switch {
		case e.Verdict != VerdictObserved:
			e.Dev, e.Ino, e.Arg = userDev(uint32(r.Dev)), r.Arg, 0
		case e.Control == ControlFile && r.Arg != 0:
			e.Op, e.Arg = FileOp(r.Arg), 0
			if e.Op == FileOpLink || e.Op == FileOpRename {
				e.Path, e.NewPath = twoPaths(r.Path[:])
			}
		}
	case ControlEgress, ControlIngress:
		switch r.Family {
		case unix.AF_INET:
			e.Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(r.Addr[:4])), r.Port)
		case unix.AF_INET6:
			e.Addr = netip.AddrPortFrom(netip.AddrFrom16(r.Addr), r.Port)
		}
		if e.Hook == HookSkbEgress || e.Hook == HookSkbIngress {
			e.Proto = uint8(r.Arg)
			e.SourceRouted = r.Arg&uint64(rauhaPacketFlagPACKET_UNJUDGEABLE) != 0
			e.Unregistered = r.Arg&uint64(rauhaPacketFlagPACKET_UNREGISTERED) != 0
			e.Arg = 0
		}
	}
	return e
}

// twoPaths reads an event path that holds two, the old name in its first
// half and the new one in the second.
func twoPaths(p []int8) (oldName, newName string) {
	half := len(p) / 2
	return cString(p[:half]), cString(p[half:])
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// bootClock converts CLOCK_BOOTTIME stamps (which keep counting in
// suspend, unlike CLOCK_MONOTONIC) to wall-clock time.
type bootClock struct {
	now  time.Time
	boot int64
}

func newBootClock() bootClock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return bootClock{now: time.Now(), boot: ts.Nano()}
}

func (c bootClock) wall(ns uint64) time.Time {
	return c.now.Add(-time.Duration(c.boot - int64(ns)))
}

// Counters are a zone's per-control counters, summed over CPUs.
type Counters struct {
	Checks   [NumControls]uint64 // decisions taken for the zone's tasks
	Denies   [NumControls]uint64 // decisions that denied (or would have, in audit mode)
	Observed [NumControls]uint64 // failed syscalls the fallback's observer saw
	Dropped  uint64              // events lost to a full ring buffer
}

// Counters reads one zone's counters. Zone 0 counts the fallback's egress
// programs running for a cgroup whose membership is being added or removed.
func (k *Kernel) Counters(zone uint32) (Counters, error) {
	var c Counters
	if zone >= MaxZones {
		return c, fmt.Errorf("zone id %d out of range (< %d)", zone, MaxZones)
	}
	var perCPU []rauhaCounters
	if err := k.maps.ZoneCounters.Lookup(zone, &perCPU); err != nil {
		return c, fmt.Errorf("read counters of zone %d: %w", zone, err)
	}
	for _, p := range perCPU {
		for i := range NumControls {
			c.Checks[i] += p.Checks[i]
			c.Denies[i] += p.Denies[i]
			c.Observed[i] += p.Observed[i]
		}
		c.Dropped += p.Dropped
	}
	return c, nil
}

func (k *Kernel) resetCounters(zone uint32) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	return k.maps.ZoneCounters.Update(zone, make([]rauhaCounters, n), ebpf.UpdateAny)
}
