package zone

import "time"

// Kinds of Observation. A learning zone records, aggregated by (Kind,
// Object), every operation of its members that its base policy would deny;
// Suggest turns them into the narrowest policy that allows them and Simulate
// replays them against a candidate policy.
const (
	ObserveExec       = "exec"       // Object: the file run or mapped executable, e.g. "/usr/bin/apt"
	ObserveRead       = "read"       // Object: a path opened for reading, e.g. "/etc/shadow"
	ObserveWrite      = "write"      // Object: a path opened for writing, created, removed, or whose metadata changed
	ObserveEgress     = "egress"     // Object: "tcp 10.0.0.5:80", "udp [fd00::1]:53", "icmp 10.0.0.5"
	ObservePeerZone   = "peer_zone"  // Object: the zone of another zone's member a packet went to
	ObserveCapability = "capability" // Object: a capability exercised, e.g. "CAP_NET_RAW"
	ObserveSignal     = "signal"     // Object: the zone of the target ("host" for a task in no zone)
	ObservePtrace     = "ptrace"     // Object: as for ObserveSignal
	ObserveSyscall    = "syscall"    // Object: a syscall name, e.g. "keyctl"
)

// Observation is one kind of operation a learning zone's members performed,
// aggregated: how often, when first and last, and who did it first.
type Observation struct {
	Kind      string    `json:"kind"`
	Object    string    `json:"object"`
	Count     uint64    `json:"count"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Comm      string    `json:"comm,omitempty"`      // the program that did it first
	Container string    `json:"container,omitempty"` // the container that did it first
}
