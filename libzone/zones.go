package libzone

import (
	"context"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/bpf"
	"slices"
	"strings"
	"time"

	"errors"
	"fmt"

	"github.com/rauha-runtime/rauha/zone"
)

// ZoneInfo is a zone with its member containers, as "rauha zone inspect"
// shows it.
type ZoneInfo struct {
	zone.Zone
	Members []zone.Container `json:"members"`
}

// Zones lists every zone of this root with its members.
func (e *Engine) Zones() ([]ZoneInfo, error) {
	var out []ZoneInfo
	err := e.store.View(func(tx *zone.Tx) error {
		zs, err := tx.Zones()
		if err != nil {
			return err
		}
		for _, z := range zs {
			m, err := tx.Members(z.Name)
			if err != nil {
				return err
			}
			out = append(out, ZoneInfo{Zone: z, Members: nonNil(m)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list zones in %s: %w", e.root, err)
	}
	// The statuses come from the containers' state, read after the
	// transaction: no need to hold the database meanwhile.
	var all []*zone.Container
	for i := range out {
		for j := range out[i].Members {
			all = append(all, &out[i].Members[j])
		}
	}
	eachParallel(len(all), func(i int) { e.liveStatus(all[i]) })
	return out, nil
}

// Zone returns one zone with its members.
func (e *Engine) Zone(name string) (*ZoneInfo, error) {
	if err := zone.ValidateName("zone name", name); err != nil {
		return nil, err
	}
	var out *ZoneInfo
	err := e.store.View(func(tx *zone.Tx) error {
		z, err := tx.Zone(name)
		if err != nil {
			return err
		}
		m, err := tx.Members(name)
		if err != nil {
			return err
		}
		out = &ZoneInfo{Zone: *z, Members: nonNil(m)}
		return nil
	})
	if errors.Is(err, zone.ErrNotFound) {
		return nil, &noZoneError{name: name, root: e.root}
	}
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	for i := range out.Members {
		e.liveStatus(&out.Members[i])
	}
	return out, nil
}

// noZoneError says a zone does not exist in words for the command line,
// and is still zone.ErrNotFound to errors.Is (the Kubernetes agent creates
// the zones it does not find).
type noZoneError struct{ name, root string }

func (e *noZoneError) Error() string {
	return fmt.Sprintf("zone %s does not exist in %s (see 'rauha zone list')", e.name, e.root)
}

func (e *noZoneError) Unwrap() error { return zone.ErrNotFound }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// CreateZone stores a new zone with policy p and pushes the policy to the
// kernel, so containers can join it by annotation.
func (e *Engine) CreateZone(name string, p *zone.Policy, source string) (*zone.Zone, error) {
	if err := zone.ValidateName("zone name", name); err != nil {
		return nil, err
	}
	enf, err := e.enforcer()
	if err != nil {
		return nil, err
	}
	defer enf.Close()
	z := &zone.Zone{Name: name, PolicySource: source, Created: time.Now().UTC()}
	z.SetPolicy(p)
	if un := enf.Unavailable(&z.Policy, nil); len(un) > 0 && z.Policy.Zone.Admission == zone.AdmissionStrict {
		return nil, fmt.Errorf("zone %s (admission strict): %s cannot be enforced here with %s (use admission = \"audit\" to create it anyway)", name, strings.Join(un, "; "), enf.Backend())
	}
	err = e.store.Update(func(tx *zone.Tx) error {
		if _, err := tx.Zone(name); err == nil {
			return fmt.Errorf("zone %s already exists (change its policy with 'rauha zone update %s --policy FILE')", name, name)
		} else if !errors.Is(err, zone.ErrNotFound) {
			return err
		}
		return tx.PutZone(z)
	})
	if err != nil {
		return nil, fmt.Errorf("create zone %s: %w", name, err)
	}
	if err := enf.Claim(z); err != nil {
		return nil, err
	}
	if _, err := e.applyStored(enf, name); err != nil {
		return nil, err
	}
	if err := e.applyListing(enf, name); err != nil {
		return nil, err
	}
	return z, nil
}

// applyListing pushes again the policies of the zones whose
// network.allowed_zones or signals.allowed_zones name zone name, which has
// just been created: names become zone ids when a policy is pushed, and a
// name with no zone then allowed nothing.
func (e *Engine) applyListing(enf Enforcer, name string) error {
	var listing []string
	err := e.store.View(func(tx *zone.Tx) error {
		zs, err := tx.Zones()
		listing = zonesListing(zs, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("zones that allow zone %s: %w", name, err)
	}
	for _, z := range listing {
		if _, err := e.applyStored(enf, z); err != nil {
			return err
		}
	}
	return nil
}

// zonesListing names the zones of zs, other than name itself, whose
// network.allowed_zones or signals.allowed_zones list name.
func zonesListing(zs []zone.Zone, name string) []string {
	var out []string
	for _, z := range zs {
		net := z.Policy.Network.AllowedZones
		if z.Name != name && (net != nil && slices.Contains(*net, name) || slices.Contains(z.Policy.Signals.AllowedZones, name)) {
			out = append(out, z.Name)
		}
	}
	return out
}

// UpdateZone replaces a zone's policy; running members see the change on
// their next checked operation. The kernel first gets the meet of the old
// and the new policy, then the store the new one, then the kernel: if the
// update is interrupted anywhere, the kernel is never looser than the store.
func (e *Engine) UpdateZone(name string, p *zone.Policy, source string) (*zone.Zone, error) {
	// A missing zone fails before the enforcer installs anything.
	if err := e.store.View(func(tx *zone.Tx) error { _, err := tx.Zone(name); return err }); errors.Is(err, zone.ErrNotFound) {
		return nil, fmt.Errorf("zone %s does not exist (create it with 'rauha zone create')", name)
	} else if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	// The enforcer before the lock: opening it may restore every zone
	// (reconcile), which takes the policy lock itself.
	enf, err := e.enforcer()
	if err != nil {
		return nil, err
	}
	defer enf.Close()
	// From reading the old policy to pushing the new one, no other rauha
	// of this root pushes a policy (see lockPolicies).
	unlock, err := e.lockPolicies()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var (
		old     *zone.Zone
		interim *ResolvedZone
		names   string
	)
	// A policy in mode "learn" makes the zone learn from it, any other
	// ends learning (zone.Zone.SetPolicy).
	var asked zone.Zone
	asked.SetPolicy(p)
	p = &asked.Policy
	err = e.store.View(func(tx *zone.Tx) (err error) {
		if old, err = tx.Zone(name); err != nil {
			return err
		}
		m := *old
		m.Policy = *meet(&old.Policy, p)
		interim, names, err = resolveZone(tx, &m)
		return err
	})
	if errors.Is(err, zone.ErrNotFound) {
		return nil, fmt.Errorf("zone %s does not exist (create it with 'rauha zone create')", name)
	} else if err != nil {
		return nil, fmt.Errorf("zone %s: %w", name, err)
	}
	if un := enf.Unavailable(p, nil); len(un) > 0 && p.Zone.Admission == zone.AdmissionStrict {
		return nil, fmt.Errorf("zone %s: the new policy (admission strict) asks for controls this kernel cannot enforce with %s: %s", name, enf.Backend(), strings.Join(un, ", "))
	}
	// The meet goes to the kernel before the store has the new policy, and
	// the new one only after: whichever step is the last to finish, the
	// kernel is at least as strict as the stored policy. Each write comes
	// after the push before it, in a transaction of its own (push.go).
	if err := e.push(enf, interim, names); err != nil {
		return nil, err
	}
	// The mounts that hold file rules on the fallback are part of what the
	// kernel holds: they are made for the meet too, before the store names
	// the new rules. A member that cannot be guarded does not stop the
	// update (the others, and every new container, get the stricter
	// rules); it is named at the end, and verify fails it.
	guardErr := e.guardMembers(enf, &old.Policy, interim)
	z := *old
	z.Policy, z.Learning, z.PolicySource = asked.Policy, asked.Learning, source
	var next *ResolvedZone
	err = e.store.Update(func(tx *zone.Tx) (err error) {
		if err := tx.PutZone(&z); err != nil {
			return err
		}
		next, names, err = resolveZone(tx, &z)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store the policy of zone %s: %w", name, err)
	}
	if err := e.push(enf, next, names); err != nil {
		return nil, fmt.Errorf("%w (the kernel holds a policy at least as strict as both; 'rauha zone reconcile' retries)", err)
	}
	if guardErr != nil {
		return &z, fmt.Errorf("zone %s is updated, but its new file rules do not hold in running containers ('rauha zone verify %s' fails them; recreate them, or remove the cause and run the update again): %w", name, name, guardErr)
	}
	return &z, nil
}

// guardMembers has the enforcer make, in the members of rz that have a
// process, the mounts that hold rz's file rules (fileguardupdate.go) and
// close their code routes when rz has exec rules (execupdate.go); old is
// the policy the zone had.
func (e *Engine) guardMembers(enf Enforcer, old *zone.Policy, rz *ResolvedZone) error {
	if !heldByMounts(&rz.Policy.Filesystem) && !hasExecRules(&rz.Policy) {
		return nil
	}
	var (
		running []RunningMember
		loaded  = map[string]*Container{}
		errs    []error
	)
	for _, m := range rz.Members {
		c, err := e.Load(m.ID)
		if errors.Is(err, ErrNotExist) {
			continue // deleted meanwhile
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		st, err := c.lc.State()
		status := libcontainer.Stopped
		if err == nil {
			status, err = c.lc.Status()
		}
		if err != nil {
			if ok, errExists := e.exists(m.ID); ok || errExists != nil {
				errs = append(errs, fmt.Errorf("container %s: %w", m.ID, err))
			}
			continue // else deleted meanwhile
		}
		if status == libcontainer.Stopped {
			continue // no process: a restart is a new create
		}
		cfg := c.Config()
		running = append(running, RunningMember{ID: m.ID, Pid: st.InitProcessPid, StartTime: st.InitProcessStartTime, Config: &cfg})
		loaded[m.ID] = c
	}
	if len(running) == 0 {
		return errors.Join(errs...)
	}
	links, err := enf.GuardRunning(&rz.Policy, old, running)
	errs = append(errs, err)
	// Other names of denied files found now are masked like those found at
	// create, and recorded with them: verify checks their masks, a drain
	// judges errors on them, and an exec denies them in its domain.
	for id, l := range links {
		if err := loaded[id].recordDeniedLinks(l); err != nil {
			errs = append(errs, fmt.Errorf("container %s: record the other names of denied files: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// DeleteZone removes a zone and its kernel state. A zone with members is
// refused unless force, which deletes its containers first. With the root's
// last zone go its kernel programs and pins (the host-wide sys_exit
// observer among them): an operator who deletes zones is done with them.
// The zone of one container alone, which goes with that container, does
// not do this: the next create would reinstall every program, tens to
// hundreds of milliseconds where a create may add 3 ms.
func (e *Engine) DeleteZone(name string, force bool) error {
	info, err := e.Zone(name)
	if err != nil {
		return err
	}
	if len(info.Members) > 0 && !force {
		ids := make([]string, 0, len(info.Members))
		for _, m := range info.Members {
			ids = append(ids, m.ID)
		}
		return fmt.Errorf("zone %s has %d member(s) (%s): delete them first, or use --force to stop and delete them", name, len(ids), strings.Join(ids, ", "))
	}
	var errs []error
	for _, m := range info.Members {
		err := e.Delete(m.ID, true)
		if errors.Is(err, ErrNotExist) {
			err = e.RemoveStale(m.ID)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("zone %s: %w", name, errors.Join(errs...))
	}
	enf, err := e.enforcer()
	if err != nil {
		return err
	}
	defer enf.Close()
	var gone *zone.Zone
	var net zoneNet
	err = e.store.Update(func(tx *zone.Tx) error {
		z, err := tx.Zone(name)
		if errors.Is(err, zone.ErrNotFound) {
			return nil // an implicit zone went away with its last member
		} else if err != nil {
			return err
		}
		if m, err := tx.Members(name); err != nil {
			return err
		} else if len(m) > 0 {
			return fmt.Errorf("zone %s gained member %s while it was being deleted", name, m[0].ID)
		}
		gone = z
		net, err = deleteZone(tx, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete zone %s: %w", name, err)
	}
	if gone == nil {
		return nil
	}
	if err := e.unplugZone(nil, net, false); err != nil {
		return err
	}
	if err := enf.Remove(gone); err != nil {
		return err
	}
	_, err = e.uninstallIfNoZones(enf)
	return err
}

// Events drains the kernel's pending events and returns the zone's recorded
// events since the given time (zone "" = every zone).
func (e *Engine) Events(name string, since time.Time) ([]zone.Event, error) {
	log, err := e.DrainEvents()
	if err != nil {
		return nil, err
	}
	return log.Read(name, since)
}

// DrainEvents moves pending kernel events into the event log and returns it.
func (e *Engine) DrainEvents() (*zone.EventLog, error) {
	log := zone.NewEventLog(e.root)
	if _, installed := bpf.InstalledBackend(bpf.PinDirFor(e.root)); !installed {
		// Nothing in the kernel, so nothing to drain; reading events must
		// not install programs (a follower would undo a reconcile).
		return log, nil
	}
	enf, err := e.enforcer()
	if err != nil {
		return nil, err
	}
	defer enf.Close()
	if err := e.drain(enf, log); err != nil {
		return nil, fmt.Errorf("collect events from the kernel: %w", err)
	}
	return log, nil
}

// ZoneStats reads a zone's kernel counters.
func (e *Engine) ZoneStats(name string) (*ZoneStats, error) {
	info, err := e.Zone(name)
	if err != nil {
		return nil, err
	}
	enf, err := e.enforcer()
	if err != nil {
		return nil, err
	}
	defer enf.Close()
	return enf.Stats(&info.Zone)
}

// FollowEvents prints a zone's events as they happen until ctx ends,
// draining the kernel's buffer while it waits.
func (e *Engine) FollowEvents(ctx context.Context, name string, since time.Time, fn func(zone.Event) error) error {
	log, err := e.DrainEvents()
	if err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := e.DrainEvents(); err != nil {
					logrus.Warnf("collect events: %v", err)
				}
			}
		}
	}()
	return log.Follow(ctx, name, since, fn)
}

// liveStatus replaces a member's recorded status (how far its create
// got) with its status now, as "rauha list" reports it: "gone" without state.
func (e *Engine) liveStatus(m *zone.Container) {
	st, err := e.State(m.ID)
	if err != nil {
		m.Status = "gone"
		return
	}
	m.Status = st.Status
}
