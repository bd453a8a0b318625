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

// Drain moves the events waiting in the kernel into the per-zone event logs
// under the state root. There is no daemon: every command that shows events
// or verifies a zone drains first. It runs inside a store transaction, which
// serialises drains (a consumed event is gone for every reader) and gives a
// consistent view of zone ids and member cgroups to name the event's zone
// and container.
func (ke *kernelEnforcer) Drain(log *zone.EventLog) error {
	return ke.store.Update(func(tx *zone.Tx) error {
		evs, err := ke.k.DrainEvents(drainBatch, time.Now().Add(drainDeadline))
		if err != nil || len(evs) == 0 {
			return err
		}
		zones, err := tx.Zones()
		if err != nil {
			return err
		}
		ids := zoneIDs{}
		for i := range zones {
			ids[zones[i].ID] = &zones[i]
		}
		cs, err := tx.Containers()
		if err != nil {
			return err
		}
		members := map[uint64]string{}
		for _, c := range cs {
			members[c.CgroupID] = c.ID
		}
		files := fileDenyPathsOf(tx, zones)
		byZone := map[string][]zone.Event{}
		for _, ev := range evs {
			ze := ke.zoneEvent(ev, ids, members, files)
			byZone[ze.Zone] = append(byZone[ze.Zone], ze)
		}
		for name, batch := range byZone {
			if err := log.Append(name, batch...); err != nil {
				return fmt.Errorf("record events of zone %s: %w", name, err)
			}
		}
		return nil
	})
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

// files names the inodes of bpf-lsm file and exec denials by the policy path
// that denied them (the kernel event carries only the inode).
func (ke *kernelEnforcer) zoneEvent(ev bpf.Event, zones zoneIDs, members map[uint64]string, files map[uint32]fileDenyPaths) zone.Event {
	z := zones.at(ev.Zone, ev.Time)
	name := "zone-" + strconv.FormatUint(uint64(ev.Zone), 10)
	if z != nil {
		name = z.Name
	} else {
		// The zone was deleted since: keep the event under its id, and
		// do not name its inodes by the deny lists of another zone.
		files = nil
	}
	ze := zone.Event{
		Time:      ev.Time,
		Zone:      name,
		Container: members[ev.CgroupID],
		Pid:       int(ev.Tgid),
		Comm:      ev.Comm,
		Control:   ev.Control.String(),
		Decision:  zone.DecisionDeny,
		Backend:   ke.Backend(),
		TargetPid: int(ev.TargetPid),
	}
	if ev.Verdict == bpf.VerdictAudited {
		ze.Decision = zone.DecisionAudit
	}
	if tz := zones.at(ev.TargetZone, ev.Time); tz != nil {
		ze.TargetZone = tz.Name
	}
	switch ev.Control {
	case bpf.ControlEgress:
		ze.Object = ev.Addr.String()
		if ev.Hook == bpf.HookSkbEgress {
			ze.Object = packetObject(ev)
		}
	case bpf.ControlSignal:
		ze.Object = fmt.Sprintf("signal %d to pid %d", ev.Arg, ev.TargetPid)
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
		ze.Object = ev.Path
		if ev.Control == bpf.ControlExec && ev.Verdict == bpf.VerdictObserved {
			ze.Object = execRouteObject(ev)
		}
		if ev.Hook != bpf.HookSysExit && ev.Path != "" && ev.Ino != 0 {
			// An LSM hook denied a file below a listed directory: the
			// inode is the directory's, the path the file's name.
			if dir := files[ev.Zone][inodeKey(ev.Dev, ev.Ino)]; dir != "" {
				ze.Object = path.Join(dir, "…", ev.Path)
			}
		}
		if ze.Object == "" && ev.Ino != 0 {
			ze.Object = files[ev.Zone][inodeKey(ev.Dev, ev.Ino)]
		}
		if ze.Object == "" && ev.Ino != 0 {
			ze.Object = fmt.Sprintf("inode %d on device %d", ev.Ino, ev.Dev)
		}
		if op := fileHookOps[ev.Hook]; op != "" {
			ze.Object = op + " " + ze.Object
		}
		if ze.Object == "" {
			ze.Object = pathlessSyscalls[ev.Syscall] // an fd or a handle: no path to show
		}
	}
	if ev.Errno != 0 {
		ze.Object += " (" + ev.Errno.Error() + ")"
	}
	return ze
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
}

// packetObject names a packet the egress packet program dropped: "packet
// 10.0.0.2 icmp", "packet [::1]:53 udp", "packet 10.0.0.2:7 udp
// source-routed". A port is shown only where the protocol has one.
func packetObject(ev bpf.Event) string {
	dst := ev.Addr.String()
	if ev.Addr.Port() == 0 {
		dst = ev.Addr.Addr().String()
	}
	s := "packet " + dst + " " + ipProtoName(ev.Proto)
	if ev.SourceRouted {
		s += " source-routed"
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
