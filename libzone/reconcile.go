package libzone

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/bpf"

	"github.com/rauha-runtime/rauha/zone"
)

// createGrace protects a create in progress from a concurrent reconcile: a
// record younger than this in the "creating" state belongs to a create that
// may still finish.
const createGrace = time.Minute

// Reconcile makes the kernel and the state directory agree with the store,
// which is the truth: it drops records of containers that are gone, kills
// containers that have state but no record (nothing enforces them), re-pushes
// every zone's policy and every live member (on the fallback with the
// mounts of its file rules that a running member lacks: those an update
// could not make), removes kernel entries nobody owns, and uninstalls the
// programs of a root that has no zones left. It also removes the pins of
// other roots whose state directory is gone (removeOrphanPins). It returns
// one line per repair.
func (e *Engine) Reconcile() ([]string, error) {
	// Another root's pins that cannot be removed are no reason to leave
	// this root unrepaired: that error is returned with this root's.
	fixed, orphanErr := e.removeOrphanPins()
	more, err := e.reconcileRoot()
	return append(fixed, more...), errors.Join(orphanErr, err)
}

func (e *Engine) reconcileRoot() ([]string, error) {
	if _, installed := bpf.InstalledBackend(bpf.PinDirFor(e.root)); !installed {
		if has, err := e.hasZones(); err != nil || !has {
			return nil, err // nothing in the kernel and nothing to put there
		}
	}
	enf, err := e.enforcer()
	if err != nil {
		return nil, err
	}
	if checkErr := enf.Check(); checkErr != nil {
		// Programs bound to maps nobody can update: install afresh; the
		// enforcer of fresh pins restores every zone and member.
		logrus.Warnf("reinstall the kernel programs: %v", checkErr)
		if err := enf.Uninstall(); err != nil {
			return nil, err
		}
		if enf, err = e.enforcer(); err != nil {
			return nil, err
		}
		enf.Close()
		return []string{"kernel programs reinstalled: " + checkErr.Error()}, nil
	}
	defer enf.Close()
	fixed, err := e.reconcile(enf)
	// Here, not in reconcile: the enforcer's own restore (openEnforcer)
	// runs reconcile too, and must leave the programs it was opened for.
	if removed, uerr := e.uninstallIfNoZones(enf); uerr != nil {
		err = errors.Join(err, uerr)
	} else if removed {
		fixed = append(fixed, "no zones left: removed the kernel programs and maps of "+e.root)
	}
	return fixed, err
}

// removeOrphanPins removes the pin directories (with their links, among
// them a host-wide sys_exit observer, and their anchor cgroups) of roots
// whose state directory no longer exists: nothing can ever manage those
// zones again, and their programs would run on every syscall for good.
// A pin directory made by a rauha that did not record its root is left
// alone (bpf.RemoveOrphan).
func (e *Engine) removeOrphanPins() ([]string, error) {
	own := bpf.PinDirFor(e.root)
	gone := func(root string) bool {
		_, err := os.Stat(root)
		return root != e.root && errors.Is(err, os.ErrNotExist)
	}
	var fixed []string
	var errs []error
	for _, dir := range bpf.PinDirs() {
		if dir == own {
			continue
		}
		removed, err := bpf.RemoveOrphan(dir, gone)
		if err != nil {
			errs = append(errs, err)
		} else if removed {
			fixed = append(fixed, fmt.Sprintf("removed the kernel programs and pins of %s: its root is gone", dir))
		}
	}
	return fixed, errors.Join(errs...)
}

func (e *Engine) reconcile(enf Enforcer) ([]string, error) {
	var (
		fixed []string
		errs  []error
		zones []zone.Zone
		recs  []zone.Container
	)
	note := func(format string, args ...any) { fixed = append(fixed, fmt.Sprintf(format, args...)) }
	err := e.store.View(func(tx *zone.Tx) (err error) {
		if zones, err = tx.Zones(); err != nil {
			return err
		}
		recs, err = tx.Containers()
		return err
	})
	if err != nil {
		return nil, err
	}

	// Records first: a container whose state is gone leaves its zone.
	live := map[uint64]uint32{}
	zoneID := map[string]uint32{}
	for _, z := range zones {
		zoneID[z.Name] = z.ID
	}
	recorded := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		recorded[r.ID] = true
		c, err := e.Load(r.ID)
		if errors.Is(err, ErrNotExist) {
			if r.Status == recordCreating && time.Since(r.Created) < createGrace && creatorAlive(r.Creator) {
				continue
			}
			if err := e.removeStaleState(enf, r); err != nil {
				errs = append(errs, err)
			}
			note("removed the record of container %s: its state is gone", r.ID)
			continue
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.Status == recordCreating {
			if time.Since(r.Created) < createGrace && creatorAlive(r.Creator) {
				continue // its create is still running: it finishes or undoes it
			}
			if err := e.removeDeadCreate(enf, c, r); err != nil {
				errs = append(errs, err)
			}
			note("removed container %s: its create died before it finished", r.ID)
			continue
		}
		status, err := c.Status()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if status == "stopped" {
			continue // nothing runs; delete cleans up the rest
		}
		z := &zone.Zone{Name: r.Zone, ID: zoneID[r.Zone]}
		old := r.CgroupID
		// A namespace libcontainer made for the container is still its
		// own; whether a joined one is can no longer be told from the
		// processes in it (the container's own are there now), so its
		// registration stays as Join left it, or absent (fail closed).
		netns := ""
		if cfg := c.lc.Config(); privateNamespace(&cfg, configs.NEWNET) && r.Pid > 0 {
			netns = "/proc/" + strconv.Itoa(r.Pid) + "/ns/net"
		}
		// Addresses added to its namespace since create (DHCP, a late
		// CNI plugin) are registered now.
		oldAddrs := r.Addresses
		if cfg := c.lc.Config(); r.Pid > 0 {
			addrs, err := memberAddrs(&cfg, r.Pid)
			if err != nil {
				errs = append(errs, fmt.Errorf("container %s: %w", r.ID, err))
			} else {
				r.Addresses = addrs
			}
		}
		if err := e.join(enf, z, r, netns); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(filepath.Join(e.stateDir(r.ID), joiningFile)); err == nil {
			note("container %s: joined zone %s (its create was interrupted before the join finished)", r.ID, r.Zone)
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("container %s: %w", r.ID, err))
		}
		if r.CgroupID != old || !slices.Equal(r.Addresses, oldAddrs) {
			if err := e.store.Update(func(tx *zone.Tx) error { return tx.PutContainer(r) }); err != nil {
				errs = append(errs, err)
			}
		}
		if r.CgroupID != old {
			note("container %s: cgroup id %d recorded (was %d)", r.ID, r.CgroupID, old)
		}
		if !slices.Equal(r.Addresses, oldAddrs) {
			note("container %s: addresses %v registered (were %v)", r.ID, r.Addresses, oldAddrs)
		}
		live[r.CgroupID] = z.ID
	}

	// A zone made for one container that has no members: a rauha.db from
	// before schema 4 kept it while its container's record went with the
	// boot it ran in (such zones now live beside their records). A member
	// removed above took its zone with it.
	hadMembers := map[string]bool{}
	for _, r := range recs {
		hadMembers[r.Zone] = true
	}
	kept := zones[:0]
	for _, z := range zones {
		if z.Implicit && !hadMembers[z.Name] {
			dropped, err := e.dropEmptyZone(enf, z.Name)
			if err != nil {
				errs = append(errs, err)
			} else if dropped {
				note("removed zone %s: it was made for one container and has no members left", z.Name)
				continue
			}
		}
		kept = append(kept, z)
	}
	zones = kept

	// State without a record: a container nothing enforces. Kill it.
	entries, err := os.ReadDir(e.root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, ent := range entries {
		if !ent.IsDir() || recorded[ent.Name()] || zone.ValidateName("container id", ent.Name()) != nil {
			continue
		}
		// A create that started after the records were read has a record
		// by now (admit comes before libcontainer makes the directory).
		if rec, err := e.record(ent.Name()); err != nil || rec != nil {
			continue
		}
		c, err := e.Load(ent.Name())
		if errors.Is(err, ErrNotExist) && ent.Name() != "events" {
			// A directory without state.json and without a record: what a
			// killed create or delete left. Nothing can load it again.
			if err := os.RemoveAll(filepath.Join(e.root, ent.Name())); err != nil {
				errs = append(errs, err)
			}
			note("removed the state directory of %s: it had neither state nor record", ent.Name())
			continue
		} else if err != nil {
			continue
		}
		status, err := c.Status()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if status != "stopped" {
			if err := c.kill(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.lc.Destroy(); err != nil {
			errs = append(errs, err)
		}
		if status == "stopped" {
			note("removed stopped container %s: it had no record (it ran in an earlier boot, or its create died)", ent.Name())
		} else {
			note("killed and removed container %s: it had no record, so no zone enforced it", ent.Name())
		}
	}

	// Kernel: every zone's policy again, then what nobody owns.
	keepZones := map[uint32]bool{}
	for i := range zones {
		keepZones[zones[i].ID] = true
		if _, err := e.applyStored(enf, zones[i].Name); err != nil {
			errs = append(errs, err)
		} else if err := e.guardStored(enf, zones[i].Name); err != nil {
			errs = append(errs, err)
		}
	}
	pruned, err := enf.Prune(live, keepZones)
	if err != nil {
		errs = append(errs, err)
	}
	fixed = append(fixed, pruned...)
	netFixed, err := e.reconcileBridged()
	if err != nil {
		errs = append(errs, err)
	}
	fixed = append(fixed, netFixed...)

	for _, f := range fixed {
		logrus.Debugf("reconcile: %s", f)
	}
	return fixed, errors.Join(errs...)
}

// guardStored has the enforcer make, in zone name's members that have a
// process, the mounts of its stored file rules that they lack (those an
// update could not make: guardMembers), under the policy lock as an update
// makes them. The stored policy is also the one before: a reconcile takes
// no writable path away.
func (e *Engine) guardStored(enf Enforcer, name string) error {
	unlock, err := e.lockPolicies()
	if err != nil {
		return err
	}
	defer unlock()
	rz, _, err := e.storedZone(name)
	if err != nil || rz == nil {
		return err // nil: deleted meanwhile
	}
	if err := e.guardMembers(enf, &rz.Policy, rz); err != nil {
		return fmt.Errorf("zone %s: its file rules do not hold in running containers: %w", name, err)
	}
	return nil
}

// uninstallIfNoZones removes the kernel programs and maps (and their pins)
// of a root without zones, which needs none. The check and the removal run
// inside one read transaction: the store takes one exclusive lock for
// readers and writers alike, so a concurrent create (which stores its zone
// before it opens the kernel side) either stored its zone before the check
// or opens the kernel side after the removal and reinstalls it. Nothing is
// written, so nothing is committed. A root that still has zones costs one
// read-only look.
func (e *Engine) uninstallIfNoZones(enf Enforcer) (removed bool, err error) {
	if has, err := e.hasZones(); err != nil || has {
		return false, err
	}
	err = e.store.View(func(tx *zone.Tx) error {
		if tx.HasZones() {
			return nil
		}
		if err := enf.Uninstall(); err != nil {
			return err
		}
		removed = true
		return nil
	})
	return removed, err
}

func (e *Engine) hasZones() (has bool, err error) {
	err = e.store.View(func(tx *zone.Tx) error { has = tx.HasZones(); return nil })
	return has, err
}

// reconcileBridged hands reconcileNetwork the bridged zones and members
// the store holds now, after the records of gone containers were dropped.
// A root that never had a bridged zone has no table and no interfaces of
// rauha's to look for.
func (e *Engine) reconcileBridged() ([]string, error) {
	var subnets map[string]netip.Prefix
	members := map[string]*zone.Container{}
	err := e.store.View(func(tx *zone.Tx) error {
		subnets = tx.Subnets()
		recs, err := tx.Containers()
		for i := range recs {
			if recs[i].Lease != nil {
				members[recs[i].ID] = &recs[i]
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return e.reconcileNetwork(subnets, members)
}

// removeDeadCreate removes a container whose create died after
// libcontainer saved its state but before the record said "created": its
// init waits on the exec fifo with whatever part of its zone membership
// and network the create made (a bridge, a veth, a lease, published
// ports), and nobody was told it exists. Like runc, whose killed create
// leaves nothing the caller must know of, it goes entirely.
func (e *Engine) removeDeadCreate(enf Enforcer, c *Container, r *zone.Container) error {
	return errors.Join(c.kill(), c.lc.Destroy(), e.release(enf, r.ID, "", r))
}
