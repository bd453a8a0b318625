package libzone

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	bolt "go.etcd.io/bbolt"

	"github.com/rauha-runtime/rauha/zone"
)

// A zone made for one container that a rauha before schema 4 left in
// rauha.db, whose container's record went with an earlier boot (the
// records are in the boot's containers file now), has no members:
// reconcile removes it and says so, and keeps a named zone without members.
func TestReconcileRemovesMemberlessImplicitZones(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: reconcile installs the kernel programs of a test root")
	}
	root := t.TempDir()
	p, err := zone.Preset("standard")
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(root, zone.DBName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"meta", "zones", "zone_ids", "subnets", "subnets6", "containers", "zone_members", "leases", "ports"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		for _, z := range []zone.Zone{{Name: "old", ID: 5, Implicit: true, Policy: *p, Generation: 1}, {Name: "kept", ID: 6, Policy: *p, Generation: 1}} {
			raw, err := json.Marshal(z)
			if err != nil {
				return err
			}
			if err := tx.Bucket([]byte("zones")).Put([]byte(z.Name), raw); err != nil {
				return err
			}
			if err := tx.Bucket([]byte("zone_ids")).Put(binary.BigEndian.AppendUint32(nil, z.ID), []byte(z.Name)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte(zone.MetaSchemaVersion), []byte("3"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The root's last zone takes its kernel programs and pins along.
		for _, name := range []string{"old", "kept"} {
			if err := e.DeleteZone(name, true); err != nil && !errors.Is(err, zone.ErrNotFound) {
				t.Errorf("remove test zone %s and the kernel programs: %v", name, err)
			}
		}
	})
	// The root has no pins yet: Reconcile first restores its kernel state,
	// a reconcile that logs its repairs instead of returning them.
	var logged bytes.Buffer
	logrus.SetOutput(&logged)
	fixed, err := e.Reconcile()
	logrus.SetOutput(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	want := "removed zone old: it was made for one container and has no members left"
	if !slices.Contains(fixed, want) && !strings.Contains(logged.String(), want) {
		t.Errorf("reconcile said %q and logged %q, not %q", fixed, logged.String(), want)
	}
	err = e.Store().View(func(tx *zone.Tx) error {
		zs, err := tx.Zones()
		if err == nil && (len(zs) != 1 || zs[0].Name != "kept") {
			t.Errorf("zones after reconcile: %+v; want kept alone", zs)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
