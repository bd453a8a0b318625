package zone

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseSubnet(t *testing.T) {
	for in, want := range map[string]string{
		"10.5.0.0/24":   "10.5.0.0/24",
		" 10.5.0.9/24 ": "10.5.0.0/24",
		"192.0.2.8/29":  "192.0.2.8/29",
		"10.0.0.0/8":    "10.0.0.0/8",
	} {
		p, err := ParseSubnet(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseSubnet(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "10.5.0.0", "10.5.0.0/30", "10.0.0.0/7", "fd00::/64", "127.0.0.0/24", "224.0.0.0/24", "0.0.0.0/8", "255.255.255.0/24", "10.5.0.0/24x"} {
		if p, err := ParseSubnet(in); err == nil {
			t.Errorf("ParseSubnet(%q) = %v, want an error", in, p)
		}
	}
}

func TestParsePorts(t *testing.T) {
	ps, err := ParsePorts("8080:80/tcp, 5353:53/udp,9000:90")
	if err != nil {
		t.Fatal(err)
	}
	want := []Port{{8080, 80, "tcp"}, {5353, 53, "udp"}, {9000, 90, "tcp"}}
	if len(ps) != len(want) {
		t.Fatalf("got %v, want %v", ps, want)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("port %d: got %v, want %v", i, ps[i], want[i])
		}
	}
	for _, in := range []string{"80", "0:80", "80:0", "70000:80", "80:80/sctp", "+80:80", "80:80,80:81", "a:b", "80:80/"} {
		if _, err := ParsePorts(in); err == nil {
			t.Errorf("ParsePorts(%q) succeeded, want an error", in)
		}
	}
	// The same host port on two protocols is two ports.
	if _, err := ParsePorts("53:53/tcp,53:53/udp"); err != nil {
		t.Error(err)
	}
}

func leaseIn(t *testing.T, s *Store, id, zone, want string, taken func(netip.Prefix) bool, ports ...Port) (*Container, error) {
	t.Helper()
	c := &Container{ID: id, Zone: zone, Ports: ports}
	err := s.Update(func(tx *Tx) error {
		if _, err := tx.Zone(zone); err != nil {
			if err := tx.PutZone(&Zone{Name: zone, Policy: *mustPreset("standard")}); err != nil {
				return err
			}
		}
		if err := tx.Lease(c, want, taken); err != nil {
			return err
		}
		return tx.PutContainer(c)
	})
	return c, err
}

func TestLease(t *testing.T) {
	s := OpenStore(t.TempDir())
	a1, err := leaseIn(t, s, "a1", "a", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := leaseIn(t, s, "a2", "a", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a1.Lease.Address.String() != "10.201.0.2/24" || a2.Lease.Address.String() != "10.201.0.3/24" || a1.Lease.Gateway.String() != "10.201.0.1" {
		t.Fatalf("zone a leases %v %v, want 10.201.0.2/24 and .3 via .1", a1.Lease, a2.Lease)
	}
	// The host's routes and other zones' subnets are skipped.
	hostHas := netip.MustParsePrefix("10.201.1.0/24")
	b1, err := leaseIn(t, s, "b1", "b", "", func(p netip.Prefix) bool { return p.Overlaps(hostHas) })
	if err != nil {
		t.Fatal(err)
	}
	if b1.Lease.Address.String() != "10.201.2.2/24" {
		t.Fatalf("zone b got %v, want 10.201.2.2/24", b1.Lease)
	}
	if _, err := leaseIn(t, s, "c1", "c", "10.201.0.128/25", nil); err == nil || !strings.Contains(err.Error(), `zone "a" holds`) {
		t.Fatalf("an overlapping network.subnet: %v", err)
	}
	c1, err := leaseIn(t, s, "c1", "c", "192.0.2.0/29", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c1.Lease.Address.String() != "192.0.2.2/29" {
		t.Fatalf("zone c got %v", c1.Lease)
	}
	// A /29 has gateway .1, members .2-.6, broadcast .7.
	for i := 2; i <= 5; i++ {
		if _, err := leaseIn(t, s, "c"+string(rune('0'+i)), "c", "192.0.2.0/29", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leaseIn(t, s, "c9", "c", "", nil); err == nil || !strings.Contains(err.Error(), "every address") {
		t.Fatalf("a full subnet: %v", err)
	}
	// A freed address is leased again; published ports are exclusive.
	if err := s.Update(func(tx *Tx) error { return tx.DeleteContainer("a1") }); err != nil {
		t.Fatal(err)
	}
	a3, err := leaseIn(t, s, "a3", "a", "", nil, Port{8080, 80, "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if a3.Lease.Address != a1.Lease.Address {
		t.Fatalf("a3 got %v, want the freed %v", a3.Lease.Address, a1.Lease.Address)
	}
	if _, err := leaseIn(t, s, "a4", "a", "", nil, Port{8080, 81, "tcp"}); err == nil || !strings.Contains(err.Error(), "already published") {
		t.Fatalf("a published port twice: %v", err)
	}
	if _, err := leaseIn(t, s, "a5", "a", "", nil, Port{8080, 80, "udp"}); err != nil {
		t.Fatal(err)
	}
	// A deleted zone's subnet is free again.
	err = s.Update(func(tx *Tx) error {
		if err := tx.DeleteContainer("b1"); err != nil {
			return err
		}
		return tx.DeleteZone("b")
	})
	if err != nil {
		t.Fatal(err)
	}
	d1, err := leaseIn(t, s, "d1", "d", "10.201.2.0/24", nil)
	if err != nil || d1.Lease.Address.String() != "10.201.2.2/24" {
		t.Fatalf("zone d in b's old subnet: %v %v", d1, err)
	}
	_ = s.View(func(tx *Tx) error {
		if got := tx.Subnets(); len(got) != 3 {
			t.Errorf("subnets %v, want a, c and d", got)
		}
		return nil
	})
}
