package libzone

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rauha-runtime/rauha/zone"
)

// A zone created after the zones that allow it must reach their kernel
// policies: both allow-lists that name zones count, and a zone listing
// itself is not pushed twice.
func TestZonesListing(t *testing.T) {
	zs := []zone.Zone{
		{Name: "net", Policy: zone.Policy{Network: zone.Network{AllowedZones: zone.List("db")}}},
		{Name: "sig", Policy: zone.Policy{Signals: zone.Signals{AllowedZones: []string{"db"}}}},
		{Name: "other", Policy: zone.Policy{Network: zone.Network{AllowedZones: zone.List("web")}}},
		{Name: "none"},
		{Name: "db", Policy: zone.Policy{Network: zone.Network{AllowedZones: zone.List("db")}}},
	}
	if got := zonesListing(zs, "db"); !slices.Equal(got, []string{"net", "sig"}) {
		t.Errorf("zones listing db = %v, want [net sig]", got)
	}
	if got := zonesListing(zs, "nobody"); len(got) != 0 {
		t.Errorf("zones listing nobody = %v, want none", got)
	}
}

// A missing zone is zone.ErrNotFound to errors.Is (the Kubernetes agent
// creates what it does not find), in words for the command line.
func TestMissingZoneIsNotFound(t *testing.T) {
	e, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Zone("nosuch")
	if !errors.Is(err, zone.ErrNotFound) {
		t.Errorf("Zone of a missing zone: %v, not zone.ErrNotFound", err)
	}
	if err == nil || !strings.Contains(err.Error(), "zone nosuch does not exist in ") {
		t.Errorf("message %q", err)
	}
}

// Deleting a zone forgets the paths of its denied inodes (stored by its
// kernel id): a later zone that gets the id must not name its file events
// with them.
func TestDeleteZoneForgetsDenyPaths(t *testing.T) {
	s := zone.OpenStore(t.TempDir())
	p, err := zone.Preset("standard")
	if err != nil {
		t.Fatal(err)
	}
	z := &zone.Zone{Name: "z", Policy: *p}
	err = s.Update(func(tx *zone.Tx) error {
		if err := tx.PutZone(z); err != nil {
			return err
		}
		return tx.SetMeta(fileDenyMetaKey(z.ID), `{"1:2":"/etc/shadow"}`)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx *zone.Tx) error { _, err := deleteZone(tx, "z"); return err }); err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *zone.Tx) error {
		if v, err := tx.Meta(fileDenyMetaKey(z.ID)); err != nil || v != "" {
			t.Errorf("deny paths of deleted zone id %d: %q, %v", z.ID, v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
