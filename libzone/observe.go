package libzone

import (
	"cmp"
	"fmt"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// drainBatch bounds one drain: the ring buffer holds a few thousand events,
// and a command must not stall behind a flood.
const (
	drainBatch    = 8192
	drainDeadline = time.Second
)

// ControlResources names the events of updates refused because they would
// raise a limit above the zone's [resources]. The engine decides those, not
// the kernel, so they have no kernel counter.
const ControlResources = "resources"

// recordDenial appends a deny the engine itself decided to the zone's event
// log, dated now and attributed to this rauha process. A failure to record
// is logged: the refusal stands either way.
func (e *Engine) recordDenial(ev zone.Event) {
	ev.Decision = zone.DecisionDeny
	ev.Pid = os.Getpid()
	ev.Comm = "rauha"
	// The backend the root's programs were installed with (none yet: "").
	switch lsm, known := bpf.InstalledBackend(bpf.PinDirFor(e.root)); {
	case known && lsm:
		ev.Backend = BackendLSM
	case known:
		ev.Backend = BackendLandlock
	}
	if err := zone.NewEventLog(e.root).Append(ev.Zone, ev); err != nil {
		logrus.Warnf("record the %s deny of zone %s: %v", ev.Control, ev.Zone, err)
	}
}

// ControlCounters are one control's counters of a zone.
type ControlCounters struct {
	Control  string `json:"control"`
	Checks   uint64 `json:"checks"`
	Denies   uint64 `json:"denies"`
	Observed uint64 `json:"observed"`
}

// ZoneStats is what "rauha zone stats" shows.
type ZoneStats struct {
	Zone     string            `json:"zone"`
	Backend  string            `json:"backend"`
	Controls []ControlCounters `json:"controls"`
	// Dropped counts events lost because the kernel's ring buffer was full
	// when they happened: they are counted, never silently gone.
	Dropped uint64 `json:"dropped_events"`
}

// drain moves the events waiting in the kernel into the per-zone event logs
// under the state root, and what learning zones recorded into their
// recordings in the store. There is no daemon: every command that shows events
// or verifies a zone drains first. drain.lock makes the drains of a root one
// at a time from taking the events to appending them: a consumed event is
// gone for every reader, and the logs keep the kernel's order. The store is
// read only when there are events, after they were taken, so the zone ids
// and member cgroups of that moment name them; a drain that finds none
// neither reads nor writes the store.
func (e *Engine) drain(enf Enforcer, log *zone.EventLog) error {
	unlock, err := e.lockRootFile("drain.lock")
	if err != nil {
		return err
	}
	defer unlock()
	evs, err := enf.Drain()
	if err != nil {
		return err
	}
	// A malformed entry is reported after the rest is recorded.
	learned, learnErr := enf.DrainLearned()
	if len(evs) == 0 && len(learned) == 0 {
		return learnErr
	}
	var names eventNames
	if err := e.store.View(func(tx *zone.Tx) (err error) { names, err = readEventNames(tx); return err }); err != nil {
		return err
	}
	names.rules.state = func(id string) *stateFile {
		sf, _ := e.readStateFile(id) // none: a member deleted since
		return sf
	}
	byZone := map[string][]zone.Event{}
	for _, ev := range evs {
		if ze, ok := names.event(ev); ok {
			byZone[ze.Zone] = append(byZone[ze.Zone], ze)
		}
	}
	for name, batch := range byZone {
		if err := log.Append(name, batch...); err != nil {
			return fmt.Errorf("record events of zone %s: %w", name, err)
		}
	}
	if len(learned) > 0 {
		if err := e.recordLearned(&names, learned); err != nil {
			return fmt.Errorf("record what learning zones observed: %w", err)
		}
	}
	return learnErr
}

// eventNames are what the store knows to name kernel events by: zones by
// kernel id, members by cgroup id, and on bpf-lsm the denied inodes by the
// policy path that denied them (per zone id).
type eventNames struct {
	zones   zoneIDs
	members map[uint64]string
	files   map[uint32]DenyPaths
	rules   ruleMembers
}

func readEventNames(tx *zone.Tx) (eventNames, error) {
	zones, err := tx.Zones()
	if err != nil {
		return eventNames{}, err
	}
	n := eventNames{zones: zoneIDs{}, members: map[uint64]string{}, files: fileDenyPathsOf(tx, zones),
		rules: ruleMembers{containers: map[uint64]*zone.Container{}}}
	for i := range zones {
		n.zones[zones[i].ID] = &zones[i]
	}
	cs, err := tx.Containers()
	if err != nil {
		return eventNames{}, err
	}
	for i, c := range cs {
		n.members[c.CgroupID] = c.ID
		n.rules.containers[c.CgroupID] = &cs[i]
	}
	return n, nil
}

// event names a kernel event's zones, member and denied inode; false for
// an error of the fallback's mounts that no path of the zone's rules
// explains (KernelEvent.RulePaths), which is not the zone's doing.
func (n *eventNames) event(ke KernelEvent) (zone.Event, bool) {
	ze := ke.Event
	ze.Zone = "zone-" + strconv.FormatUint(uint64(ke.ZoneID), 10)
	z := n.zones.at(ke.ZoneID, ze.Time)
	if ke.RulePaths != nil {
		p := ""
		if z != nil {
			p = ruledPath(z, ke.RulePaths, n.rules.member(ke.CgroupID), ke.FollowLast)
		}
		if p == "" {
			return ze, false
		}
		ze.Object = p
	}
	if z != nil {
		ze.Zone = z.Name
		// Only the zone that had the id then: a deleted zone's inodes are
		// not named by the deny lists of another one.
		if p := n.files[ke.ZoneID][ke.Inode+"/"+ke.Below]; ke.Below != "" && p != "" {
			// Denied by name: Inode is the directory, Below the listed
			// name.
			ze.Object = p
		} else if p := n.files[ke.ZoneID][ke.Inode]; ke.Inode != "" && p != "" {
			ze.Object = p
			if ke.Below != "" {
				ze.Object = path.Join(p, "…", ke.Below)
			}
		}
	}
	if ke.Op != "" {
		ze.Object = ke.Op + " " + ze.Object
	}
	ze.Container = n.members[ke.CgroupID]
	if tz := n.zones.at(ke.TargetZoneID, ze.Time); tz != nil {
		ze.TargetZone = tz.Name
	}
	ze.Object += ke.Outcome
	return ze, true
}

// EventsPending reports whether events wait in the kernel (see
// Enforcer.EventsPending).
func (ke *kernelEnforcer) EventsPending() (bool, error) { return ke.k.EventsPending() }

// Drain takes the events waiting in the kernel (see Enforcer.Drain).
func (ke *kernelEnforcer) Drain() ([]KernelEvent, error) {
	evs, err := ke.k.DrainEvents(drainBatch, time.Now().Add(drainDeadline))
	if err != nil {
		return nil, err
	}
	out := make([]KernelEvent, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ke.kernelEvent(ev))
	}
	return out, nil
}

// pathlessSyscalls name the observed file syscalls that carry no path
// (x86_64 numbers, bpf/observer.bpf.h).
var pathlessSyscalls = map[uint32]string{
	91:  "fchmod",
	93:  "fchown",
	190: "fsetxattr",
	304: "open_by_handle_at",
}

// zoneIDs are the zones of a root by kernel id.
type zoneIDs map[uint32]*zone.Zone

// at is the zone that had id when an event happened at t, or nil. Ids come
// back once a root has gone round all of them (zone.MaxZoneID), and events
// wait in the kernel until a command drains them, so the zone holding an id
// now owns its events only from its creation on. The second of slack is for
// a small step of the wall clock, by which the kernel's events are dated.
func (ids zoneIDs) at(id uint32, t time.Time) *zone.Zone {
	z := ids[id]
	if z == nil || t.Before(z.Created.Add(-time.Second)) {
		return nil
	}
	return z
}

// kernelEvent translates a kernel event; the engine names its zones and
// member (eventNames).
func (ke *kernelEnforcer) kernelEvent(ev bpf.Event) KernelEvent {
	ze := zone.Event{
		Time:      ev.Time,
		Pid:       int(ev.Tgid),
		Comm:      ev.Comm,
		Control:   ev.Control.String(),
		Decision:  zone.DecisionDeny,
		Backend:   ke.Backend(),
		TargetPid: int(ev.TargetPid),
	}
	out := KernelEvent{ZoneID: ev.Zone, TargetZoneID: ev.TargetZone, CgroupID: ev.CgroupID}
	if ev.Verdict == bpf.VerdictAudited {
		ze.Decision = zone.DecisionAudit
	}
	switch ev.Control {
	case bpf.ControlEgress, bpf.ControlIngress:
		ze.Object = ev.Addr.String()
		if ev.Hook == bpf.HookSkbEgress || ev.Hook == bpf.HookSkbIngress {
			ze.Object = packetObject(ev)
		}
	case bpf.ControlSignal:
		ze.Object = signalObject(ev)
	case bpf.ControlPtrace:
		ze.Object = fmt.Sprintf("ptrace pid %d", ev.TargetPid)
	case bpf.ControlCapability:
		if ev.Hook == bpf.HookSysExit {
			// The observer: bpf(2) denied by the seccomp rule of a member
			// without CAP_BPF or CAP_SYS_ADMIN (controls.go, keepsBPF).
			ze.Object = fmt.Sprintf("bpf(2) command %d without CAP_BPF or CAP_SYS_ADMIN", ev.Arg)
		} else {
			ze.Object = capabilityName(ev.Arg)
		}
	default:
		if ev.Op != 0 {
			// An error the fallback's mounts give: the engine keeps it
			// when a path it names is the zone's, and names it by that.
			out.Op = ev.Op.String()
			out.RulePaths = []string{ev.Path}
			out.FollowLast = ev.Op == bpf.FileOpUnixConnect
			if ev.NewPath != "" {
				out.RulePaths = append(out.RulePaths, ev.NewPath)
			}
			break
		}
		ze.Object = ev.Path
		if ev.Control == bpf.ControlExec && ev.Verdict == bpf.VerdictObserved {
			ze.Object = execRouteObject(ev)
		}
		if ev.Hook != bpf.HookSysExit && ev.Path != "" && ev.Ino != 0 {
			// An LSM hook denied a file below a listed directory: the
			// inode is the directory's, the path the file's name.
			out.Inode = inodeKey(ev.Dev, ev.Ino)
			out.Below = ev.Path
		}
		if ze.Object == "" && ev.Ino != 0 {
			// The bpf-lsm hooks know the inode alone: the engine names
			// it by the policy path that denied it.
			out.Inode = inodeKey(ev.Dev, ev.Ino)
			ze.Object = fmt.Sprintf("inode %d on device %d", ev.Ino, ev.Dev)
		}
		out.Op = fileHookOps[ev.Hook]
		if ze.Object == "" {
			ze.Object = pathlessSyscalls[ev.Syscall] // an fd or a handle: no path to show
		}
	}
	if ev.Hook == bpf.HookIoUring {
		// A request's completion: "io_uring openat /etc/shadow",
		// "io_uring renameat /a -> /b".
		out.Op = "io_uring " + cmp.Or(ioUringOps[ev.IoUringOp], "op "+strconv.Itoa(int(ev.IoUringOp)))
		if ev.NewPath != "" {
			ze.Object += " -> " + ev.NewPath
		}
		if ze.Object == "" {
			ze.Object = "(path not known)"
		}
	}
	if ev.Errno != 0 {
		out.Outcome = " (" + ev.Errno.Error() + ")"
	}
	out.Event = ze
	return out
}

// ioUringOps name the io_uring requests whose denials the kernel reports
// (IORING_OP_*, bpf/iouring.bpf.h).
var ioUringOps = map[uint8]string{
	16: "connect",
	18: "openat",
	28: "openat2",
	35: "renameat",
	36: "unlinkat",
	37: "mkdirat",
	38: "symlinkat",
	39: "linkat",
	41: "fsetxattr",
	42: "setxattr",
	55: "ftruncate",
}

// fileHookOps names what the bpf-lsm file hooks beyond open and exec
// denied (bpf/lsmfile.bpf.h), in front of the object.
var fileHookOps = map[bpf.Hook]string{
	bpf.HookLSMInodeSetattr:     "setattr",
	bpf.HookLSMInodeSetxattr:    "setxattr",
	bpf.HookLSMInodeRemovexattr: "removexattr",
	bpf.HookLSMInodeLink:        "link",
	bpf.HookLSMInodeRename:      "rename",
	bpf.HookLSMUnixConnect:      "unix connect",
	bpf.HookLSMUnixSend:         "unix send",
	bpf.HookLSMInodeSetACL:      "set acl",
	bpf.HookLSMInodeRemoveACL:   "remove acl",
	bpf.HookLSMInodeUnlink:      "unlink",
	bpf.HookLSMInodeRmdir:       "rmdir",
	bpf.HookLSMPathChmod:        "chmod",
	bpf.HookLSMPathChown:        "chown",
	bpf.HookLSMPathTruncate:     "truncate",
	bpf.HookLSMPathUnlink:       "unlink",
	bpf.HookLSMPathRmdir:        "rmdir",
	bpf.HookLSMPathMknod:        "create",
	bpf.HookLSMPathMkdir:        "mkdir",
	bpf.HookLSMPathSymlink:      "symlink",
	bpf.HookLSMPathLink:         "link",
	bpf.HookLSMPathRename:       "rename",
}

// signalObject names a denied signal: "signal 15 to pid 42"; one a file
// would have sent to the owner a zone task set, "signal 29 to pid 42 (file
// owner)"; a pidfd_send_signal seen by the observer names the pidfd's file
// ("signal 15 to pidfd [pidfd]"); a zone task refused an owner because no
// record of it could be kept, "file owner (F_SETOWN) not recorded".
func signalObject(ev bpf.Event) string {
	switch {
	case ev.Hook == bpf.HookLSMFileSendSigiotask:
		return fmt.Sprintf("signal %d to pid %d (file owner)", ev.Arg, ev.TargetPid)
	case ev.Hook == bpf.HookLSMFileFcntl || ev.Hook == bpf.HookLSMFileIoctl:
		return "file owner (F_SETOWN) not recorded"
	case ev.TargetPid == 0 && ev.Path != "":
		return fmt.Sprintf("signal %d to pidfd %s", ev.Arg, ev.Path)
	}
	return fmt.Sprintf("signal %d to pid %d", ev.Arg, ev.TargetPid)
}

// packetObject names a packet a packet program dropped: "packet
// 10.0.0.2 icmp", "packet [::1]:53 udp", "packet 10.0.0.2:7 udp
// source-routed", "packet 10.0.0.2:80 tcp from an unregistered source
// address"; at ingress "packet from 10.0.0.1:40000 tcp". A port is shown
// only where the protocol has one.
func packetObject(ev bpf.Event) string {
	addr := ev.Addr.String()
	if ev.Addr.Port() == 0 {
		addr = ev.Addr.Addr().String()
	}
	s := "packet " + addr + " " + ipProtoName(ev.Proto)
	if ev.Hook == bpf.HookSkbIngress {
		s = "packet from " + addr + " " + ipProtoName(ev.Proto)
	}
	if ev.SourceRouted {
		s += " source-routed"
	}
	if ev.Unregistered {
		s += " from an unregistered source address"
	}
	return s
}

func ipProtoName(p uint8) string {
	switch p {
	case unix.IPPROTO_ICMP:
		return "icmp"
	case unix.IPPROTO_TCP:
		return "tcp"
	case unix.IPPROTO_UDP:
		return "udp"
	case unix.IPPROTO_ICMPV6:
		return "icmpv6"
	case unix.IPPROTO_SCTP:
		return "sctp"
	case unix.IPPROTO_RAW:
		return "raw"
	}
	return "proto " + strconv.Itoa(int(p))
}

// Stats reads the zone's counters from the kernel.
func (ke *kernelEnforcer) Stats(z *zone.Zone) (*ZoneStats, error) {
	c, err := ke.k.Counters(z.ID)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", z.Name, err)
	}
	s := &ZoneStats{Zone: z.Name, Backend: ke.Backend(), Dropped: c.Dropped}
	for i := range bpf.NumControls {
		s.Controls = append(s.Controls, ControlCounters{
			Control: bpf.Control(i).String(), Checks: c.Checks[i], Denies: c.Denies[i], Observed: c.Observed[i],
		})
	}
	return s, nil
}

// The observer's x86_64 syscall numbers of the exec routes other than
// execve (bpf/observer.bpf.h).
const (
	sysMmap        = 9
	sysMprotect    = 10
	sysMemfdCreate = 319
	sysExecveat    = 322
)

// execRouteObject names what a failed exec-route syscall tried to run: the
// file mapped or executed through an fd (its last name: the observer has no
// full path for an fd), or the memfd that could not be created.
func execRouteObject(ev bpf.Event) string {
	switch ev.Syscall {
	case sysMmap:
		return "mmap PROT_EXEC of " + cmp.Or(ev.Path, fmt.Sprintf("fd %d", int32(ev.Arg)))
	case sysMprotect:
		return fmt.Sprintf("mprotect PROT_EXEC at %#x", ev.Arg)
	case sysMemfdCreate:
		if ev.Errno == syscall.EACCES {
			return "memfd_create MFD_EXEC " + ev.Path // refused by vm.memfd_noexec=2
		}
		return "memfd_create " + ev.Path
	case sysExecveat:
		if ev.Arg != 0 {
			return "execveat fd " + cmp.Or(ev.Path, strconv.FormatUint(ev.Arg, 10))
		}
	}
	return ev.Path
}
