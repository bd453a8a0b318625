package libzone

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/zone"
)

// ControlAdmission names the events of containers an existing zone refused
// at create: strict admission, or a bundle asking for another policy than
// the zone's. The engine decides those, not the kernel, so they have no
// kernel counter.
const ControlAdmission = "admission"

// admission is a new container on its way into its zone: resolveZone finds
// the zone, admit judges the container against the zone's policy, persist
// stores both, and the later steps of launch make it a member.
type admission struct {
	zone    *zone.Zone
	rec     *zone.Container
	config  *configs.Config // narrowed to the policy's config controls by admit
	lsm     bool            // the root's backend is bpf-lsm
	newZone bool            // the zone comes with this container: persist stores it
	without string          // what audit admission let the container start without
	bridged bool            // rauha wires the container to its zone's bridge (planNetwork)
	wiring  *wiring         // of a bridged member, when started beside its init
}

// planNetwork decides whether rauha configures the container's network:
// in a bridged zone, when it gets a namespace of its own (a joined one is
// its owner's to configure; admit lists that as a conflict). Published
// ports (org.rauha.ports) need that.
func (a *admission) planNetwork(annotations map[string]string) error {
	a.rec.Lease, a.rec.Ports = nil, nil
	a.bridged = a.zone.Policy.Network.Mode == zone.NetworkBridged && bridgedNetns(a.config)
	spec := annotations[AnnotationPorts]
	if spec == "" {
		return nil
	}
	if !a.bridged {
		return fmt.Errorf("annotation %s: container %s publishes ports, which needs a zone with network.mode = \"bridged\" and a network namespace of the container's own; zone %s has network.mode = %q", AnnotationPorts, a.rec.ID, a.zone.Name, a.zone.Policy.Network.Mode)
	}
	ports, err := zone.ParsePorts(spec)
	if err != nil {
		return fmt.Errorf("annotation %s: %w", AnnotationPorts, err)
	}
	a.rec.Ports = ports
	return nil
}

// admitAndStore takes every decision about container id before anything of
// it exists, and stores what it decided: the zone it joins (resolveZone),
// whether that zone admits it (admit) and its network (planNetwork) are
// judged in the same store transaction that writes the zone, when it comes
// with the container, and the record (persist), so no other rauha can
// change the zone in between. A refused container leaves no record, zone
// or state directory; a zone that exists keeps the refusal as an event.
func (e *Engine) admitAndStore(id string, b *Bundle, o CreateOptions) (*admission, error) {
	annotations := b.Spec.Annotations
	name := zoneOf(id, annotations)
	if err := zone.ValidateName("zone name", name); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationZone, err)
	}
	wanted, err := wantedPolicy(annotations)
	if err != nil {
		return nil, err
	}
	// The backend and the bundle's conversion need nothing from the
	// store: they run while it opens.
	prepared := beside(func() (preparation, error) {
		lsm, err := e.kernelBackend()
		if err != nil {
			return preparation{}, err
		}
		config, err := e.libcontainerConfig(id, b, o)
		return preparation{config: config, lsm: lsm}, err
	})
	var a *admission
	judged := 0
	decide := func(tx *zone.Tx) error {
		p, err := prepared()
		if err != nil {
			return err
		}
		if a, err = e.resolveZone(tx, id, b.Dir, name, annotations[AnnotationZone] != "", wanted); err != nil {
			return err
		}
		// Admission narrows the configuration to the policy it judged: a
		// second judgement starts from the bundle's.
		config := p.config
		if judged++; judged > 1 {
			if config, err = e.libcontainerConfig(id, b, o); err != nil {
				return err
			}
		}
		a.config, a.rec.CgroupPath, a.lsm = config, config.Cgroups.Path, p.lsm
		if err := e.admit(tx, a); err != nil {
			return err
		}
		return a.planNetwork(annotations)
	}
	store := func(tx *zone.Tx) error {
		if err := decide(tx); err != nil {
			return err
		}
		if err := e.persist(tx, a); err != nil {
			return fmt.Errorf("record container %s in zone %s: %w", id, a.zone.Name, err)
		}
		return nil
	}
	if !e.store.Exists() {
		// A root without a database: the container is judged against
		// the empty store first, so that a refused one creates nothing,
		// not even the database; an admitted one is judged again in the
		// transaction that stores it.
		err = e.store.View(decide)
	}
	if err == nil {
		err = e.store.Update(store)
	}
	if err != nil {
		if _, cerr := prepared(); cerr != nil {
			return nil, cerr // the bundle's error first, as runc reports it
		}
		return nil, err
	}
	if a.without != "" {
		logrus.Warnf("zone %s admits container %s without: %s", a.zone.Name, id, a.without)
	}
	return a, nil
}

// preparation is what admission needs that the store does not hold.
type preparation struct {
	config *configs.Config
	lsm    bool
}

// wantedPolicy is the policy the bundle names with org.rauha.policy; nil
// when it names none.
func wantedPolicy(annotations map[string]string) (*wantedZonePolicy, error) {
	ref := annotations[AnnotationPolicy]
	if ref == "" {
		return nil, nil
	}
	p, src, err := zone.LoadAnnotationPolicy(ref, SyscallChecker())
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationPolicy, err)
	}
	return &wantedZonePolicy{policy: p, source: src, ref: ref}, nil
}

// wantedZonePolicy is a policy named by org.rauha.policy, as loaded.
type wantedZonePolicy struct {
	policy *zone.Policy
	source string // PolicySource of a zone made with it
	ref    string // the annotation's value
}

// resolveZone finds the zone container id joins in tx: the zone named by
// org.rauha.zone (named), else the container's own (named after it). A
// zone that does not exist yet is made, not stored, with the wanted policy,
// else the standard preset; a zone named by annotation without a policy
// must exist.
// The caller sets the admission's configuration and the record's cgroup
// path.
func (e *Engine) resolveZone(tx *zone.Tx, id, bundle, name string, named bool, wanted *wantedZonePolicy) (*admission, error) {
	stored, err := tx.Zone(name)
	if errors.Is(err, zone.ErrNotFound) {
		stored, err = nil, nil
		if wanted == nil && named {
			// A zone named by annotation is the operator's: a typo, or a
			// zone whose create was refused, must not run the workload
			// under a policy nobody chose.
			err = e.errNoSuchZone(name)
		}
	}
	if err == nil {
		if _, err = tx.Container(id); err == nil {
			err = errHasRecord(id, e.root)
		} else if errors.Is(err, zone.ErrNotFound) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("record container %s in zone %s: %w", id, name, err)
	}
	a := &admission{zone: stored, rec: &zone.Container{
		ID:      id,
		Zone:    name,
		Bundle:  bundle,
		Status:  recordCreating,
		Creator: os.Getpid(),
		Created: time.Now().UTC(),
	}}
	switch {
	case stored == nil:
		policy, source := (*zone.Policy)(nil), "preset:standard"
		if wanted != nil {
			policy, source = wanted.policy, wanted.source
		} else if policy, err = zone.Preset("standard"); err != nil {
			return nil, err
		}
		a.newZone = true
		a.zone = &zone.Zone{
			Name:         name,
			PolicySource: source,
			Implicit:     !named,
			Created:      time.Now().UTC(),
		}
		a.zone.SetPolicy(policy)
	case wanted != nil && !stored.AskedPolicy().Equal(wanted.policy):
		return nil, e.refuse(a, fmt.Sprintf("annotation %s=%s asks for another policy than the zone's %s", AnnotationPolicy, wanted.ref, stored.PolicySource),
			fmt.Errorf("record container %s in zone %s: zone %s already exists with policy %s; annotation %s=%s asks for another one (change the zone with 'rauha zone update %s --policy FILE')",
				id, name, name, stored.PolicySource, AnnotationPolicy, wanted.ref, name))
	}
	return a, nil
}

// admit decides whether the zone admits the container. It narrows the
// configuration to the policy's config controls (controls.go), then
// collects every conflict: controls this backend cannot enforce for this
// container, a network mode its namespaces contradict, exec routes, routes
// out of the member's cgroup or to the enforcement itself, a pid namespace
// shared with tasks the zone cannot be kept from, and on the fallback what
// could undo the mounts that hold the file rules. With admission = "strict"
// any conflict refuses the container; with "audit" it starts without them.
func (e *Engine) admit(tx *zone.Tx, a *admission) error {
	z, cfg, policy := a.zone, a.config, &a.zone.Policy
	conflicts := append(applyConfigControls(cfg, policy), unavailableControls(policy, cfg, a.lsm)...)
	conflicts = append(conflicts, execRoutes(cfg, policy)...)
	conflicts = append(conflicts, loaderRoutes(cfg, policy)...)
	routes, err := admitEscapeRoutes(cfg, policy, e.root, a.lsm)
	if err != nil {
		return fmt.Errorf("zone %s: container %s: %w", z.Name, a.rec.ID, err)
	}
	conflicts = append(conflicts, routes...)
	shared, err := e.sharedPidNSConflicts(tx, z, cfg, a.lsm)
	if err != nil {
		return fmt.Errorf("zone %s: container %s: %w", z.Name, a.rec.ID, err)
	}
	conflicts = append(conflicts, shared...)
	if !a.lsm {
		conflicts = append(conflicts, fileGuardRoutes(cfg, policy)...)
	}
	if len(conflicts) == 0 {
		return nil
	}
	reason := strings.Join(conflicts, "; ")
	if policy.Zone.Admission != zone.AdmissionStrict {
		a.without = reason
		return nil
	}
	return e.refuse(a, reason, fmt.Errorf("zone %s (admission strict) refuses container %s: %s cannot be enforced here (use a policy with admission = \"audit\" to start it anyway)",
		z.Name, a.rec.ID, reason))
}

// refuse returns err, the refusal of a's container. When the zone exists,
// the refusal is also an event in its log: an operator sees in the zone's
// history which containers it turned away and why. A zone that would have
// come with the container has no log and is not stored: the error is the
// only record.
func (e *Engine) refuse(a *admission, reason string, err error) error {
	if !a.newZone {
		e.recordDenial(zone.Event{
			Zone:      a.zone.Name,
			Container: a.rec.ID,
			Control:   ControlAdmission,
			Object:    reason,
		})
	}
	return err
}

// persist stores what admission decided, in admission's transaction: the
// zone when it comes with the container, the bridged member's leases and
// the container's record in state "creating". The zone and its policy are
// in the database before anything reaches the kernel.
func (e *Engine) persist(tx *zone.Tx, a *admission) error {
	if a.newZone {
		if err := tx.PutZone(a.zone); err != nil {
			return err
		}
	}
	if a.bridged {
		if err := tx.Lease(a.rec, a.zone.Policy.Network.Subnet, hostRoutes()); err != nil {
			return err
		}
		if a.zone.Policy.Network.WantsIPv6() {
			if err := tx.Lease6(a.rec, a.zone.Policy.Network.Subnet6, zone.ULAPool(e.root), hostRoutes6()); err != nil {
				return err
			}
		}
	}
	return tx.PutContainer(a.rec)
}

// errHasRecord refuses a container id that already has a record.
func errHasRecord(id, root string) error {
	return fmt.Errorf("container %s already has a record in %s (run 'rauha zone reconcile' if it is stale)", id, root)
}

// errNoSuchZone is the refusal of a container that names a zone nobody
// created and no policy to create it with; or, when the zone was asked for
// and this root refused it (NoteRefusal), the reason it was refused.
func (e *Engine) errNoSuchZone(name string) error {
	if notes, err := e.refusals(); err == nil && notes[name] != "" {
		return fmt.Errorf("zone %s does not exist on this node: %s", name, notes[name])
	}
	return fmt.Errorf("zone %s does not exist: create it first with 'rauha zone create %s --preset %s' or 'rauha zone create %s --policy FILE', or name its policy in the annotation %s",
		name, name, strings.Join(zone.PresetNames(), "|"), name, AnnotationPolicy)
}
