package zone

import (
	"encoding/json"
	"fmt"
	"time"
)

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

// LearnPolicy is what a zone enforces while it learns from base: nothing
// that its recording covers (files, exec, egress, peers, capabilities,
// signals and ptrace across zones, syscalls), so the workload runs as it
// would with no zone and every such operation is recorded. base's
// resources stay: limits are not operations to record.
func LearnPolicy(base *Policy) *Policy {
	return &Policy{
		Zone:      ZoneSettings{Mode: ModeLearn, Admission: AdmissionAudit},
		Resources: base.Resources,
	}
}

// SetPolicy gives z the policy p: a policy whose mode is "learn" makes z
// learn from p (in mode enforce) as its base; any other ends learning.
func (z *Zone) SetPolicy(p *Policy) {
	if p.Zone.Mode != ModeLearn {
		z.Policy, z.Learning = *p, nil
		return
	}
	base := p.Clone()
	base.Zone.Mode = ModeEnforce
	z.Policy, z.Learning = *LearnPolicy(base), base
}

// AskedPolicy is the policy z was given (SetPolicy): its base in mode
// "learn" while it learns.
func (z *Zone) AskedPolicy() *Policy {
	if z.Learning == nil {
		return &z.Policy
	}
	p := z.Learning.Clone()
	p.Zone.Mode = ModeLearn
	return p
}

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

// MaxObservations bounds a zone's recording: a long-running workload that
// keeps touching new objects does not grow the database without limit.
// Repeats of a recorded object only raise its count.
const MaxObservations = 20000

// bucketObservations holds one nested bucket per recording zone, keyed by
// kind, a NUL and the object.
var bucketObservations = []byte("observations")

func observationKey(kind, object string) []byte { return []byte(kind + "\x00" + object) }

// RecordObservations merges obs into zone's recording: an object already
// recorded gets its count added and its time range widened, a new one is
// stored while the recording holds fewer than MaxObservations objects. It
// returns how many new objects were dropped because the recording was full.
func (tx *Tx) RecordObservations(zone string, obs []Observation) (dropped int, err error) {
	if !tx.writable {
		return 0, errReadOnly
	}
	zones := tx.zonesTx()
	if zones == nil {
		return 0, tx.err
	}
	tx.zones.dirty = true
	top, err := zones.CreateBucketIfNotExists(bucketObservations)
	if err != nil {
		return 0, fmt.Errorf("zone %q: observations: %w", zone, err)
	}
	b, err := top.CreateBucketIfNotExists([]byte(zone))
	if err != nil {
		return 0, fmt.Errorf("zone %q: observations: %w", zone, err)
	}
	n := -1 // counted when first needed
	for _, o := range obs {
		key := observationKey(o.Kind, o.Object)
		if raw := b.Get(key); raw != nil {
			var old Observation
			if err := json.Unmarshal(raw, &old); err != nil {
				return dropped, fmt.Errorf("zone %q: observation %q: corrupt record in state database: %w", zone, key, err)
			}
			o = old.merge(o)
		} else {
			if n < 0 {
				n = b.Stats().KeyN
			}
			if n >= MaxObservations {
				dropped++
				continue
			}
			n++
		}
		if err := put(b, "observation", string(key), o); err != nil {
			return dropped, fmt.Errorf("zone %q: %w", zone, err)
		}
	}
	return dropped, nil
}

// merge adds n's count to o and widens o's time range; o keeps who did it
// first unless n is earlier.
func (o Observation) merge(n Observation) Observation {
	o.Count += n.Count
	if !n.First.IsZero() && (o.First.IsZero() || n.First.Before(o.First)) {
		o.First, o.Comm, o.Container = n.First, n.Comm, n.Container
	}
	if n.Last.After(o.Last) {
		o.Last = n.Last
	}
	return o
}

// Observations returns zone's recording in (kind, object) order; empty if it
// has none.
func (tx *Tx) Observations(zone string) ([]Observation, error) {
	top := tx.bucket(bucketObservations)
	if top == nil {
		return nil, nil
	}
	return list[Observation](top.Bucket([]byte(zone)), "observation", nil)
}

// DeleteObservations forgets zone's recording.
func (tx *Tx) DeleteObservations(zone string) error {
	if !tx.writable {
		return errReadOnly
	}
	if top := tx.bucket(bucketObservations); top == nil || top.Bucket([]byte(zone)) == nil {
		return nil
	}
	if err := tx.changing(bucketObservations).DeleteBucket([]byte(zone)); err != nil {
		return fmt.Errorf("zone %q: delete observations: %w", zone, err)
	}
	return nil
}
