package libzone

// Every push of a policy to the kernel has one shape: under policy.lock the
// engine reads what the enforcer needs from the store (one read
// transaction), the enforcer pushes, and then the engine writes what the
// store keeps of the push, the names of the denied inodes, in a transaction
// of its own. No write transaction is open while the kernel changes, and
// none holds a kernel call. The order that keeps the kernel no looser than
// the store is the caller's: a policy is stored before its first push (zone
// create, admit), and a zone update pushes the meet of the old and the new
// policy before it stores the new one (UpdateZone).

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rauha-runtime/rauha/zone"
)

// applyStored pushes zone name's policy as the store holds it now, under the
// policy lock. It reports false when the zone no longer exists.
func (e *Engine) applyStored(enf Enforcer, name string) (bool, error) {
	unlock, err := e.lockPolicies()
	if err != nil {
		return false, err
	}
	defer unlock()
	rz, names, err := e.storedZone(name)
	if err != nil || rz == nil {
		return false, err
	}
	return true, e.push(enf, rz, names)
}

// storedZone is zone name as the store holds it now, resolved for a push
// (resolveZone); nil when it no longer exists. Callers hold the policy lock.
func (e *Engine) storedZone(name string) (rz *ResolvedZone, names string, err error) {
	err = e.store.View(func(tx *zone.Tx) error {
		z, err := tx.Zone(name)
		if err != nil {
			return err
		}
		rz, names, err = resolveZone(tx, z)
		return err
	})
	if errors.Is(err, zone.ErrNotFound) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", fmt.Errorf("zone %s: %w", name, err)
	}
	return rz, names, nil
}

// resolveZone reads what a push of z (the stored zone, or one with another
// policy: a zone update's meet) needs from the store: its peers and members,
// and the names of its denied inodes as the last push stored them.
func resolveZone(tx *zone.Tx, z *zone.Zone) (rz *ResolvedZone, names string, err error) {
	rz = &ResolvedZone{Zone: z}
	if rz.Peers, rz.NetPeers, err = zonePeers(tx, &z.Policy); err != nil {
		return nil, "", err
	}
	if rz.Members, err = tx.Members(z.Name); err != nil {
		return nil, "", fmt.Errorf("list members: %w", err)
	}
	names, err = tx.Meta(fileDenyMetaKey(z.ID))
	return rz, names, err
}

// zonePeers are the kernel ids of the zones p's signals.allowed_zones and
// network.allowed_zones name.
func zonePeers(tx *zone.Tx, p *zone.Policy) (signal, net []uint32, err error) {
	if signal, err = namedZoneIDs(tx, p.Signals.AllowedZones); err != nil {
		return nil, nil, fmt.Errorf("resolve signals.allowed_zones: %w", err)
	}
	if p.Network.AllowedZones != nil {
		if net, err = namedZoneIDs(tx, *p.Network.AllowedZones); err != nil {
			return nil, nil, fmt.Errorf("resolve network.allowed_zones: %w", err)
		}
	}
	return signal, net, nil
}

// namedZoneIDs are the ids of the named zones that exist: allowing a zone that
// does not exist allows nothing.
func namedZoneIDs(tx *zone.Tx, names []string) ([]uint32, error) {
	var ids []uint32
	for _, name := range names {
		other, err := tx.Zone(name)
		if errors.Is(err, zone.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		ids = append(ids, other.ID)
	}
	return ids, nil
}

// push pushes rz's policy and stores the names of the inodes it denied;
// stored is what the store held before. The caller holds policy.lock.
func (e *Engine) push(enf Enforcer, rz *ResolvedZone, stored string) error {
	denied, err := enf.Apply(rz)
	if err != nil {
		return err
	}
	return e.storeDenyPaths(rz.Zone, denied, stored)
}

// storeDenyPaths records the names of zone z's denied inodes once they are
// in the kernel; stored is what the store held, read under the same
// policy.lock, so an unchanged map costs no write. They only name events:
// one drained between the push and this write is named by the previous map,
// or by its inode. nil (a backend that denies no inode) changes nothing.
func (e *Engine) storeDenyPaths(z *zone.Zone, denied DenyPaths, stored string) error {
	if denied == nil {
		return nil
	}
	raw := ""
	if len(denied) > 0 {
		b, err := json.Marshal(denied)
		if err != nil {
			return err
		}
		raw = string(b)
	}
	if raw == stored {
		return nil
	}
	if err := e.store.Update(func(tx *zone.Tx) error { return tx.SetMeta(fileDenyMetaKey(z.ID), raw) }); err != nil {
		return fmt.Errorf("zone %s: record the paths of the denied inodes: %w", z.Name, err)
	}
	return nil
}

// join makes container c a member of zone z in the kernel. z may carry only
// a name and an id (reconcile).
//
// On bpf-lsm the zone's deny lists must cover c before its cgroup joins.
// Under policy.lock, so that no push reads the members meanwhile: c's
// record, with the cgroup it joins with, is stored first, so every later
// push resolves the deny lists in its root too (its record is completed
// only after the join); then, when the stored policy has deny lists, the
// enforcer resolves them in every member's root and replaces the zone's
// denied inodes (the rest of the kernel policy stays as it is), and their
// names are stored. The cgroup joins last.
func (e *Engine) join(enf Enforcer, z *zone.Zone, c *zone.Container, netns string) error {
	if enf.Backend() == BackendLSM {
		if err := e.refreshDenies(enf, z.Name, c); err != nil {
			return err
		}
	}
	return enf.Join(z, c, netns)
}

func (e *Engine) refreshDenies(enf Enforcer, name string, c *zone.Container) error {
	unlock, err := e.lockPolicies()
	if err != nil {
		return err
	}
	defer unlock()
	var (
		stored  *zone.Zone
		members []zone.Container
		names   string
	)
	err = e.store.Update(func(tx *zone.Tx) error {
		if err := tx.PutContainer(c); err != nil {
			return fmt.Errorf("zone %s: record container %s: %w", name, c.ID, err)
		}
		z, err := tx.Zone(name)
		if err != nil {
			return fmt.Errorf("zone %s: %w", name, err)
		}
		if !hasInodeRules(&z.Policy) {
			return nil
		}
		if members, err = tx.Members(name); err != nil {
			return fmt.Errorf("zone %s: list members: %w", name, err)
		}
		stored = z
		names, err = tx.Meta(fileDenyMetaKey(z.ID))
		return err
	})
	if err != nil || stored == nil {
		return err
	}
	denied, err := enf.RefreshDenies(stored, members)
	if err != nil {
		return fmt.Errorf("container %s: %w", c.ID, err)
	}
	return e.storeDenyPaths(stored, denied, names)
}
