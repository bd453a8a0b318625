package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"

	"github.com/rauha-runtime/rauha/zone"
)

// Container status values kept in the database. libcontainer's own state is
// authoritative for a live container; the record says how far create got, so
// reconcile can tell a finished create from one that died half-way.
const (
	recordCreating = "creating"
	recordCreated  = "created"
)

// joiningFile, in a container's state directory, says that its init has
// not finished joining its zone (joinZone).
const joiningFile = "joining"

// markCreated stores rec, the record of a container whose init waits for
// start, with its pid and cgroup id.
func (e *Engine) markCreated(rec zone.Container) error {
	return e.store.Update(func(tx *zone.Tx) error { return tx.PutContainer(&rec) })
}

// checkJoined refuses to run anything in a container whose create was
// killed before its init had joined the zone (joinZone).
func checkJoined(stateDir, id string) error {
	if _, err := os.Lstat(filepath.Join(stateDir, joiningFile)); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	return fmt.Errorf("container %s never finished joining its zone (its create was interrupted): nothing of it may run unenforced; run 'rauha zone reconcile' to finish the join, or delete it", id)
}

// forget removes a container's record, and its zone when the zone was made
// for this container alone and has no members left. zoneName may be empty
// when the container's config could not be read; the record names it. It
// returns the removed record (nil if there was none) and the removed zone
// (nil if the zone stays), whose kernel state the caller then removes.
func (e *Engine) forget(id, zoneName string) (rec *zone.Container, gone *zone.Zone, net zoneNet, err error) {
	err = e.store.Update(func(tx *zone.Tx) error {
		r, err := tx.Container(id)
		switch {
		case errors.Is(err, zone.ErrNotFound):
		case err != nil:
			return err
		default:
			rec, zoneName = r, r.Zone
			if err := tx.DeleteContainer(id); err != nil {
				return err
			}
		}
		if zoneName == "" {
			return nil
		}
		z, err := tx.Zone(zoneName)
		if errors.Is(err, zone.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if !z.Implicit {
			return nil
		}
		members, err := tx.Members(zoneName)
		if err != nil || len(members) > 0 {
			return err
		}
		gone = z
		net, err = deleteZone(tx, zoneName)
		return err
	})
	return rec, gone, net, err
}

// release takes a container out of its zone: kernel membership, record,
// and the zone itself when it was the container's own. The root's kernel
// programs stay even when that was its last zone: the next create would
// install them again, which costs far more than the budget of a create
// (DeleteZone explains the rule). The membership leaves the kernel beside
// the removal of the record: whichever a killed delete leaves, reconcile
// repairs (a record without state is removed with its kernel state, kernel
// entries no record owns are pruned). A bridged member's network goes
// first, while its lease still keeps its address from a new member.
func (e *Engine) release(enf Enforcer, id, zoneName string, rec *zone.Container) error {
	return e.releaseUnplugged(enf, id, zoneName, rec, e.unplugBeside(rec))
}

// unplugBeside starts removing a bridged member's network (unplugMember)
// beside the caller's work: the first netlink request of a process costs
// it 0.4 ms here, and delete's removal of the container by libcontainer
// needs neither. The function it returns waits for that and returns the
// host netlink handle it used (for the zone's bridge; the caller closes
// it), nil when the member has no lease or no handle could be opened.
func (e *Engine) unplugBeside(rec *zone.Container) (wait func() (*netlink.Handle, error)) {
	if rec == nil || rec.Lease == nil {
		return func() (*netlink.Handle, error) { return nil, nil }
	}
	return beside(func() (*netlink.Handle, error) {
		h, err := hostNetlink()
		if err != nil {
			return nil, err
		}
		return h, e.unplugMember(h, rec)
	})
}

// dropUnplug waits for an unplug started by unplugBeside on a path that
// goes no further, and closes its handle.
func dropUnplug(unplugged func() (*netlink.Handle, error)) error {
	h, err := unplugged()
	if h != nil {
		h.Close()
	}
	return err
}

// releaseUnplugged is release once the member's network is being removed
// (unplugBeside).
func (e *Engine) releaseUnplugged(enf Enforcer, id, zoneName string, rec *zone.Container, unplugged func() (*netlink.Handle, error)) error {
	h, err := unplugged() // one for the member's veth and its zone's bridge
	if h != nil {
		defer h.Close()
	}
	errs := []error{err}
	left := func() error { return nil }
	if rec != nil && rec.CgroupID != 0 {
		left = besideErr(func() error { return enf.Leave(&zone.Zone{Name: rec.Zone}, rec) })
	}
	_, gone, net, err := e.forget(id, zoneName)
	errs = append(errs, err, left())
	if gone != nil {
		if err := enf.Remove(gone); err != nil {
			errs = append(errs, err)
		}
	}
	// Like the kernel programs, the bridge of the root's last bridged zone
	// stays for the next create, parked as the spare, and so does the
	// root's nftables table.
	if err := e.unplugZone(h, net, true); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// record reads a container's record; nil when it has none.
func (e *Engine) record(id string) (*zone.Container, error) {
	var rec *zone.Container
	err := e.store.View(func(tx *zone.Tx) error {
		r, err := tx.Container(id)
		if errors.Is(err, zone.ErrNotFound) {
			return nil
		}
		rec = r
		return err
	})
	return rec, err
}

// forgetQuietly is forget on an error path: the error being returned matters
// more than a failure to clean up, which reconcile repairs later.
func (e *Engine) forgetQuietly(enf Enforcer, id, zoneName string, rec *zone.Container) {
	var err error
	if enf == nil {
		_, _, _, err = e.forget(id, zoneName)
	} else {
		err = e.release(enf, id, zoneName, rec)
	}
	if err != nil {
		logrus.Warnf("remove record of container %s: %v", id, err)
	}
}

// memberZone returns the zone container id is recorded in.
func (e *Engine) memberZone(id string) (*zone.Zone, error) {
	var z *zone.Zone
	err := e.store.View(func(tx *zone.Tx) error {
		rec, err := tx.Container(id)
		if err != nil {
			return err
		}
		z, err = tx.Zone(rec.Zone)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("zone of container %s: %w (run 'rauha zone reconcile' to repair the records)", id, err)
	}
	return z, nil
}

// dropEmptyZone deletes a zone and its kernel state if it has no members,
// and reports whether it did.
func (e *Engine) dropEmptyZone(enf Enforcer, name string) (bool, error) {
	var gone *zone.Zone
	var net zoneNet
	err := e.store.Update(func(tx *zone.Tx) error {
		z, err := tx.Zone(name)
		if err != nil {
			return err
		}
		if m, err := tx.Members(name); err != nil || len(m) > 0 {
			return err
		}
		gone = z
		net, err = deleteZone(tx, name)
		return err
	})
	if errors.Is(err, zone.ErrNotFound) {
		return false, nil
	}
	if err == nil && gone != nil {
		err = errors.Join(enf.Remove(gone), e.unplugZone(nil, net, false))
	}
	return gone != nil, err
}
