package libzone

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/rauha-runtime/rauha/zone"
)

// Enforcer is the only door from the zone lifecycle to the kernel boundary.
// A backend keeps its kernel state (pinned programs and maps) outside any
// rauha process, so every method may run in a different invocation.
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
	// zone has members, and on every policy change.
	Apply(z *zone.Zone) error
	// PrepareConfig adjusts a new member's container configuration.
	PrepareConfig(z *zone.Zone, cfg *configs.Config) error
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
	// the member's registered addresses, replacing what it had.
	Join(z *zone.Zone, c *zone.Container, netns string) error
	// Leave removes a member from the kernel's view of the zone.
	Leave(z *zone.Zone, c *zone.Container) error
	// Remove deletes every piece of kernel state of a zone.
	Remove(z *zone.Zone) error
	// Verify adds this backend's checks of z and its members to r.
	Verify(z *zone.Zone, members []zone.Container, r *zone.IsolationReport)
	// Drain moves the kernel's pending deny events into log.
	Drain(log *zone.EventLog) error
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
