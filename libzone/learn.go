package libzone

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// LearnZone makes zone name learn from base: it denies nothing of what its
// recording covers and records what its members' workloads do
// (zone.LearnPolicy). A zone that does not exist is created. Learning ends
// with a zone update to a policy of another mode.
//
// The recording covers processes started after the push: on the fallback a
// running member keeps the Landlock domain, capabilities and seccomp filter
// it was created with, so start learning before the workload's containers
// are created.
func (e *Engine) LearnZone(name string, base *zone.Policy, source string) (*zone.Zone, error) {
	p := base.Clone()
	p.Zone.Mode = zone.ModeLearn
	if err := p.Validate(); err != nil {
		return nil, err
	}
	err := e.store.View(func(tx *zone.Tx) error { _, err := tx.Zone(name); return err })
	switch {
	case errors.Is(err, zone.ErrNotFound):
		return e.CreateZone(name, p, source)
	case err != nil:
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	return e.UpdateZone(name, p, source)
}

// Observations returns what zone name has recorded while learning, after
// taking everything the kernel holds: a suggestion or a simulation made
// from it sees every operation up to the moment it runs.
func (e *Engine) Observations(name string) ([]zone.Observation, error) {
	if _, err := e.DrainEvents(); err != nil {
		return nil, err
	}
	var obs []zone.Observation
	err := e.store.View(func(tx *zone.Tx) error {
		if _, err := tx.Zone(name); err != nil {
			return err
		}
		var err error
		obs, err = tx.Observations(name)
		return err
	})
	if errors.Is(err, zone.ErrNotFound) {
		return nil, fmt.Errorf("zone %s does not exist in %s (see 'rauha zone list')", name, e.root)
	}
	if err != nil {
		return nil, fmt.Errorf("zone %s: observations: %w", name, err)
	}
	return nonNil(obs), nil
}

// NotLearned says what a learning zone of this root does not record on
// its backend and kernel, one sentence each.
func (e *Engine) NotLearned() ([]string, error) {
	lsm, err := e.kernelBackend()
	if err != nil {
		return nil, err
	}
	return e.notLearned(lsm), nil
}

func (e *Engine) notLearned(lsm bool) []string {
	var out []string
	switch {
	case !bpf.LearnsCapabilities(bpf.PinDirFor(e.root), lsm):
		out = append(out, "capabilities are not recorded: the landlock backend sees them through the capability:cap_capable tracepoint, which this kernel lacks (Linux 6.14 and later have it)")
	case !lsm:
		// The tracepoint does not say which checks were made only to
		// probe (CAP_OPT_NOAUDIT); this one happens all the time.
		out = append(out, "whether a process that holds CAP_SYS_ADMIN needs it is not recorded on the landlock backend: the kernel checks it, without auditing, whenever a process commits memory, and that check is recorded as a use")
	}
	if !lsm {
		out = append(out, "ptrace is recorded only when a process attaches (PTRACE_ATTACH, PTRACE_SEIZE); process_vm_readv, /proc/PID/mem and pidfd_getfd into another zone are not recorded on the landlock backend")
	}
	return out
}

// LearnedObservation is an observation as the kernel recorded it: zones
// and the member by kernel id, for the engine to name.
type LearnedObservation struct {
	Observation zone.Observation // Object lacks the zone name of TargetZoneID
	ZoneID      uint32
	CgroupID    uint64
	// TargetZoneID: peer_zone, signal and ptrace: the other zone's id (0:
	// the host); Object is then empty.
	TargetZoneID uint32
	HasTarget    bool
}

// DrainLearned takes what learning zones recorded (see Enforcer).
func (ke *kernelEnforcer) DrainLearned() ([]LearnedObservation, error) {
	ls, err := ke.k.DrainLearned()
	out := make([]LearnedObservation, 0, len(ls))
	for _, l := range ls {
		out = append(out, learnedObservation(l))
	}
	return out, err
}

var learnKinds = map[bpf.LearnKind]string{
	bpf.LearnExec: zone.ObserveExec, bpf.LearnRead: zone.ObserveRead, bpf.LearnWrite: zone.ObserveWrite,
	bpf.LearnEgress: zone.ObserveEgress, bpf.LearnPeerZone: zone.ObservePeerZone,
	bpf.LearnCapability: zone.ObserveCapability, bpf.LearnSignal: zone.ObserveSignal,
	bpf.LearnPtrace: zone.ObservePtrace, bpf.LearnSyscall: zone.ObserveSyscall,
}

func learnedObservation(l bpf.Learned) LearnedObservation {
	o := LearnedObservation{ZoneID: l.Zone, CgroupID: l.CgroupID, Observation: zone.Observation{
		Kind: learnKinds[l.Kind], Count: l.Count, First: l.First.UTC(), Last: l.Last.UTC(), Comm: l.Comm,
	}}
	switch l.Kind {
	case bpf.LearnExec, bpf.LearnRead, bpf.LearnWrite:
		o.Observation.Object = l.Path
	case bpf.LearnEgress:
		// Port 0: a protocol without ports (ICMP, raw), "icmp 10.0.0.5".
		dst := l.Addr.String()
		if l.Addr.Port() == 0 {
			dst = l.Addr.Addr().String()
		}
		o.Observation.Object = ipProtoName(l.Proto) + " " + dst
	case bpf.LearnCapability:
		o.Observation.Object = capabilityName(uint64(l.Number))
	case bpf.LearnSyscall:
		o.Observation.Object = syscallName(l.Number)
	default: // a zone
		o.TargetZoneID, o.HasTarget = l.Number, true
	}
	return o
}

// name names a learned observation's zone, target zone and member.
func (n *eventNames) observation(lo LearnedObservation) (string, zone.Observation) {
	o := lo.Observation
	name := "zone-" + strconv.FormatUint(uint64(lo.ZoneID), 10)
	if z := n.zones.at(lo.ZoneID, o.First); z != nil {
		name = z.Name
	}
	if lo.HasTarget {
		switch tz := n.zones.at(lo.TargetZoneID, o.First); {
		case lo.TargetZoneID == 0:
			o.Object = "host"
		case tz != nil:
			o.Object = tz.Name
		default:
			o.Object = "zone-" + strconv.FormatUint(uint64(lo.TargetZoneID), 10)
		}
	}
	o.Container = n.members[lo.CgroupID]
	return name, o
}

// recordLearned stores what learning zones recorded, by zone.
func (e *Engine) recordLearned(names *eventNames, learned []LearnedObservation) error {
	byZone := map[string][]zone.Observation{}
	for _, lo := range learned {
		name, o := names.observation(lo)
		byZone[name] = append(byZone[name], o)
	}
	return e.store.Update(func(tx *zone.Tx) error {
		for name, obs := range byZone {
			if _, err := tx.Zone(name); errors.Is(err, zone.ErrNotFound) {
				continue // deleted since: its recording went with it
			} else if err != nil {
				return err
			}
			if _, err := tx.RecordObservations(name, obs); err != nil {
				return err
			}
		}
		return nil
	})
}

// learnMembers tells the kernel which members of z are armed by an exec in
// their container's mount namespace (all of them while z learns, none
// otherwise). A member without a live init is skipped: it has no workload
// to record until it is created again.
func (ke *kernelEnforcer) learnMembers(z *zone.Zone, members []zone.Container) error {
	for i := range members {
		if err := ke.learnMember(z, &members[i]); err != nil {
			return err
		}
	}
	return nil
}

func (ke *kernelEnforcer) learnMember(z *zone.Zone, c *zone.Container) error {
	if c.CgroupID == 0 {
		return nil
	}
	var mntns uint64
	if z.Policy.Zone.Mode == zone.ModeLearn && c.Pid > 0 {
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/"+strconv.Itoa(c.Pid)+"/ns/mnt", &st); errors.Is(err, os.ErrNotExist) {
			return nil
		} else if err != nil {
			return fmt.Errorf("zone %s: container %s: mount namespace: %w", z.Name, c.ID, err)
		}
		mntns = st.Ino
	}
	if err := ke.k.SetLearnMember(c.CgroupID, mntns); err != nil {
		return fmt.Errorf("zone %s: container %s: %w", z.Name, c.ID, err)
	}
	return nil
}
