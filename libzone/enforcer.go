package libzone

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/rauha-runtime/rauha/zone"
)

// Enforcer is the only door from the zone lifecycle to the kernel boundary.
// A backend keeps its kernel state (pinned programs and maps) outside any
// rauha process, so every method may run in a different invocation. It
// talks only to the kernel: what it needs from the store (other zones' ids,
// members) the engine reads first and hands in, and what the store keeps of
// a push (DenyPaths) it returns for the engine to write afterwards.
type Enforcer interface {
	// Backend names the mechanism in reports and events: "bpf-lsm" or
	// "landlock".
	Backend() string
	// Unavailable lists the controls policy p asks for that this backend
	// cannot enforce on this kernel (admission decides what that means).
	// cfg, when not nil, is a new member's configuration: what it shares
	// with the host (a pid namespace) counts too.
	Unavailable(p *zone.Policy, cfg *configs.Config) []string
	// Claim readies the kernel for a zone that has just been stored, before
	// its first Apply: its id may have belonged to a deleted zone whose
	// kernel state was not all removed (zone.MaxZoneID: ids come back), and
	// what other zones granted that one must not pass to this one. It only
	// ever withdraws permissions.
	Claim(z *zone.Zone) error
	// Apply pushes a zone's policy into the kernel. It is called before the
	// zone has members, and on every policy change. It returns the names of
	// the inodes it denied (nil on a backend that denies no inode).
	Apply(z *ResolvedZone) (DenyPaths, error)
	// RefreshDenies is called before a member joins, with the zone as
	// stored and its members, the joining one among them: a backend that
	// denies inodes (bpf-lsm) resolves the zone's deny lists in every
	// member's root and replaces the zone's denied inodes with them; the
	// rest of the zone's kernel policy stays as it is. It returns the names
	// of the denied inodes (nil when it denies none).
	RefreshDenies(z *zone.Zone, members []zone.Container) (DenyPaths, error)
	// PrepareConfig adjusts a new member's container configuration.
	PrepareConfig(z *zone.Zone, cfg *configs.Config) error
	// GuardRunning is called by a zone update with policy p (the meet of
	// the old and the new one), the zone's policy before (old) and its
	// members that have a process: a backend that holds file rules with
	// the containers' mounts (the fallback) makes in each member's mount
	// namespace those it lacks, so that the rules hold for processes
	// already running; on both backends, when p has exec rules, it closes
	// the members' code routes (noexec writable mounts, non-executable
	// memfds; execupdate.go). It returns, by member id, the other names of denied
	// inodes whose mounts a member holds now where it found names the
	// member's deniedLinksLabel does not list (to be recorded there), and
	// an error naming each member it could not guard, after trying every
	// one.
	GuardRunning(p, old *zone.Policy, members []RunningMember) (links map[string][]string, err error)
	// PrepareProcess makes a process of a member start inside the zone's
	// boundary before its first instruction: the init (initPid 0) and every
	// exec (initPid is the running container's init). started, when not
	// nil, must run once the process exists and before it executes user
	// code; release once it has started or failed to. When the backend
	// starts the workload through a program of its own (the Landlock exec
	// shim), that program writes to execStatus (nil: nowhere) why the
	// workload could not be executed, and closes it when it could.
	PrepareProcess(z *zone.Zone, cfg *configs.Config, p *libcontainer.Process, initPid int, execStatus *os.File) (started func(pid int) error, release func(), err error)
	// Join registers a member's cgroup with the zone. The member's init
	// exists and waits on the exec fifo: no user code has run. netns, when
	// not empty, is the member's network namespace that no task outside it
	// shares (ownNetns): loopback there is not egress. c.Addresses become
	// the member's registered addresses, replacing what it had. On bpf-lsm
	// the engine has called RefreshDenies for the member first.
	Join(z *zone.Zone, c *zone.Container, netns string) error
	// Leave removes a member from the kernel's view of the zone.
	Leave(z *zone.Zone, c *zone.Container) error
	// Remove deletes every piece of kernel state of a zone.
	Remove(z *zone.Zone) error
	// Verify adds this backend's checks of z and z.Members (the members
	// that have a process) to r.
	Verify(z *ResolvedZone, r *zone.IsolationReport)
	// Drain takes the kernel's pending deny events, oldest first. Consumed
	// events are gone for every reader: the engine runs one drain of a root
	// at a time.
	Drain() ([]KernelEvent, error)
	// EventsPending reports whether there are events Drain would take,
	// without taking them.
	EventsPending() (bool, error)
	// DrainLearned takes what learning zones recorded since the last
	// drain, aggregated by zone, kind and object. Taken entries are gone
	// for every reader, as events are.
	DrainLearned() ([]LearnedObservation, error)
	// Stats reads a zone's per-control counters.
	Stats(z *zone.Zone) (*ZoneStats, error)
	// Prune removes kernel entries that no record owns: members not in live
	// (cgroup id → zone id) and policies of zone ids not in zones.
	Prune(live map[uint64]uint32, zones map[uint32]bool) ([]string, error)
	// Check reports kernel state that no policy push can repair: installed
	// programs that do not use this root's maps.
	Check() error
	// Uninstall removes every program and map of this root from the kernel.
	Uninstall() error
	// Close releases what this process holds; the kernel state stays.
	Close() error
}

// ResolvedZone is a zone as the store holds it, with what the kernel side
// needs from other records read by the engine beforehand.
type ResolvedZone struct {
	*zone.Zone
	// Peers are the kernel ids of the zones named in the policy's
	// signals.allowed_zones that exist (a name without a zone allows
	// nothing).
	Peers []uint32
	// NetPeers are the kernel ids of the zones named in the policy's
	// network.allowed_zones that exist.
	NetPeers []uint32
	// Members are the zone's member containers as stored: on bpf-lsm the
	// deny lists are resolved to inodes in their roots.
	Members []zone.Container
}

// DenyPaths maps a denied inode, "dev:ino" (st_dev encoding), or a denied
// name, "dev:ino/name" (its directory's inode), to the policy path that
// denied it: the kernel reports file and exec denials on bpf-lsm
// by inode alone, and the engine keeps this map to name them.
type DenyPaths map[string]string

// KernelEvent is a decision as the kernel recorded it. Zones and the member
// are known there by kernel id only; the engine names them from the store.
type KernelEvent struct {
	// Event without Zone, Container and TargetZone; its Object lacks
	// Outcome.
	Event        zone.Event
	ZoneID       uint32
	TargetZoneID uint32 // signal and ptrace: the target's zone, 0 if none
	CgroupID     uint64
	// Inode ("dev:ino") is set when the kernel knew the object by its
	// inode alone: Object then names the inode, and the engine puts the
	// policy path that denied it in its place where it knows one.
	Inode string
	// Below is set when a bpf-lsm hook denied a file below a listed
	// directory: Inode is the directory's, Below the file's name, and the
	// engine names it "DIR/…/NAME"; or that a listed name denied it:
	// Inode is its directory's, Below the name, and the engine names it
	// by the policy path.
	Below string
	// Op is what a bpf-lsm file hook beyond open and exec denied
	// ("setattr", "unix connect"): it goes before the named object.
	Op string
	// Outcome ends the object: what the task got, " (permission denied)",
	// or "".
	Outcome string
	// RulePaths is set for an error the fallback's mounts give (EXDEV,
	// EBUSY, ENOENT; bpf.Event.Op): the paths the task named, absolute
	// ("" where the observer could not resolve one). The same error has
	// causes that are no zone's, so the engine keeps the event only when
	// one of them is, or is below, a deny or read_only path of the zone,
	// and names it by that one, each resolved as the kernel did where a
	// process of the member still runs (rulepaths.go).
	RulePaths []string
	// FollowLast: the syscall followed a symlink in the last name of
	// RulePaths too (connect(2); a rename, unlink or link acts on the name).
	FollowLast bool
}
