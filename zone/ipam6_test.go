package zone

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseSubnet6(t *testing.T) {
	for in, want := range map[string]string{
		"fd12:3456:789a:1::/64":  "fd12:3456:789a:1::/64",
		" fd12:3456:789a::5/48 ": "fd12:3456:789a::/48",
		"2001:db8:1:2::/120":     "2001:db8:1:2::/120",
	} {
		p, err := ParseSubnet6(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseSubnet6(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "fd00::", "10.0.0.0/24", "::ffff:10.0.0.0/120", "fd00::/47", "fd00::/125", "fe80::/64", "ff02::/64", "::/64", "::1/128", "fd00::/64x"} {
		if p, err := ParseSubnet6(in); err == nil {
			t.Errorf("ParseSubnet6(%q) = %v, want an error", in, p)
		}
	}
}

func TestULAPool(t *testing.T) {
	a, b := ULAPool("/run/rauha"), ULAPool("/run/rauha-test")
	if a != ULAPool("/run/rauha") || a == b {
		t.Fatalf("ULAPool is not one fixed prefix per root: %v %v", a, b)
	}
	if a.Bits() != 48 || a.Addr().As16()[0] != 0xfd || a.Masked() != a {
		t.Fatalf("ULAPool = %v, want a unique local /48", a)
	}
}

func lease6In(t *testing.T, s *Store, id, zone, want string, pool netip.Prefix, taken func(netip.Prefix) bool) (*Container, error) {
	t.Helper()
	c := &Container{ID: id, Zone: zone}
	err := s.Update(func(tx *Tx) error {
		if _, err := tx.Zone(zone); err != nil {
			if err := tx.PutZone(&Zone{Name: zone, Policy: *mustPreset("standard")}); err != nil {
				return err
			}
		}
		if err := tx.Lease(c, "", nil); err != nil {
			return err
		}
		if err := tx.Lease6(c, want, pool, taken); err != nil {
			return err
		}
		return tx.PutContainer(c)
	})
	return c, err
}

func TestLease6(t *testing.T) {
	s := OpenStore(t.TempDir())
	pool := netip.MustParsePrefix("fd01:2:3::/48")
	a1, err := lease6In(t, s, "a1", "a", "", pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := lease6In(t, s, "a2", "a", "", pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a1.Lease6.Address.String() != "fd01:2:3::2/64" || a2.Lease6.Address.String() != "fd01:2:3::3/64" || a1.Lease6.Gateway.String() != "fd01:2:3::1" {
		t.Fatalf("zone a leases %v %v, want fd01:2:3::2/64 and ::3 via ::1", a1.Lease6, a2.Lease6)
	}
	// The IPv4 lease is unchanged by the IPv6 one.
	if a1.Lease.Address.String() != "10.201.0.2/24" {
		t.Fatalf("IPv4 lease %v", a1.Lease)
	}
	// The host's routes and other zones' subnets are skipped.
	hostHas := netip.MustParsePrefix("fd01:2:3:1::/64")
	b1, err := lease6In(t, s, "b1", "b", "", pool, func(p netip.Prefix) bool { return p.Overlaps(hostHas) })
	if err != nil {
		t.Fatal(err)
	}
	if b1.Lease6.Address.String() != "fd01:2:3:2::2/64" {
		t.Fatalf("zone b got %v, want fd01:2:3:2::2/64", b1.Lease6)
	}
	if _, err := lease6In(t, s, "c1", "c", "fd01:2:3::/56", pool, nil); err == nil || !strings.Contains(err.Error(), `zone "a" holds`) {
		t.Fatalf("an overlapping network.subnet6: %v", err)
	}
	// A /124 has the gateway ::1 and members ::2 to ::f.
	for i := 0; i < 14; i++ {
		if _, err := lease6In(t, s, "c"+string(rune('a'+i)), "c", "2001:db8::/124", pool, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lease6In(t, s, "cz", "c", "", pool, nil); err == nil || !strings.Contains(err.Error(), "no free address") {
		t.Fatalf("a full IPv6 subnet: %v", err)
	}
	// A deleted member's address and a deleted zone's subnet are free again.
	err = s.Update(func(tx *Tx) error {
		if err := tx.DeleteContainer("a1"); err != nil {
			return err
		}
		if err := tx.DeleteContainer("b1"); err != nil {
			return err
		}
		return tx.DeleteZone("b")
	})
	if err != nil {
		t.Fatal(err)
	}
	a3, err := lease6In(t, s, "a3", "a", "", pool, nil)
	if err != nil || a3.Lease6.Address != a1.Lease6.Address {
		t.Fatalf("a3 got %v (%v), want the freed %v", a3, err, a1.Lease6.Address)
	}
	d1, err := lease6In(t, s, "d1", "d", "", pool, nil)
	if err != nil || d1.Lease6.Address.String() != "fd01:2:3:1::2/64" {
		t.Fatalf("zone d: %v %v, want the first free /64", d1, err)
	}
	_ = s.View(func(tx *Tx) error {
		if got := tx.Subnets6(); len(got) != 3 {
			t.Errorf("IPv6 subnets %v, want a, c and d", got)
		}
		return nil
	})
}
