package bpf

import (
	"bufio"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// Addresses of members that share a network namespace stay registered
// until the last of them leaves; an address two zones' members hold is
// the first's, then passes to the other; PruneAddrs drops what no
// registered member holds.
func TestMemberAddrs(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	shared, ll := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("fe80::1")
	cg1, cg2, cg3 := testCgroup(t, "addr1"), testCgroup(t, "addr2"), testCgroup(t, "addr3")
	id1, err := k.AddMember(3, cg1)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := k.AddMember(3, cg2)
	if err != nil {
		t.Fatal(err)
	}
	id3, err := k.AddMember(4, cg3)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	owners := func() map[netip.Addr]uint32 {
		t.Helper()
		o, err := k.AddrZones()
		must(err)
		return o
	}
	must(k.SetMemberAddrs(3, id1, []netip.Addr{shared, ll}))
	must(k.SetMemberAddrs(3, id2, []netip.Addr{shared}))
	must(k.SetMemberAddrs(4, id3, []netip.Addr{shared}))
	if o := owners(); o[shared] != 3 || o[ll] != 3 || len(o) != 2 {
		t.Fatalf("AddrZones = %v, want %v and %v in zone 3", o, shared, ll)
	}
	regs, err := k.MemberAddrs()
	must(err)
	if !slices.Equal(regs[id1], []netip.Addr{shared, ll}) || !slices.Equal(regs[id3], []netip.Addr{shared}) {
		t.Fatalf("MemberAddrs = %v", regs)
	}

	must(k.RemoveMember(cg1, 0))
	if o := owners(); o[shared] != 3 || len(o) != 1 {
		t.Fatalf("after the first holder left: AddrZones = %v, want only %v in zone 3", o, shared)
	}
	must(k.RemoveMember(cg2, 0))
	if o := owners(); o[shared] != 4 {
		t.Fatalf("after zone 3's last holder left: AddrZones = %v, want %v in zone 4", o, shared)
	}
	// A member replaces its addresses.
	other := netip.MustParseAddr("2001:db8::3")
	must(k.SetMemberAddrs(4, id3, []netip.Addr{other}))
	if o := owners(); o[other] != 4 || len(o) != 1 {
		t.Fatalf("after SetMemberAddrs again: AddrZones = %v", o)
	}
	// What a killed delete leaves: addresses of a cgroup no zone has.
	must(k.maps.ZoneByCgid.Delete(id3))
	dropped, err := k.PruneAddrs()
	must(err)
	if !slices.Equal(dropped, []netip.Addr{other}) || len(owners()) != 0 {
		t.Fatalf("PruneAddrs dropped %v, left %v", dropped, owners())
	}
	if regs, _ := k.MemberAddrs(); len(regs) != 0 {
		t.Fatalf("PruneAddrs left member addresses %v", regs)
	}
}

func TestZonesPolicyRoundTrip(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	p := ZonePolicy{ZonesRestricted: true, NetPeers: []uint32{9, 8}, SignalFrom: []uint32{8}}
	if err := k.SetPolicy(5, p); err != nil {
		t.Fatal(err)
	}
	got, err := k.PolicyOf(5)
	if err != nil || !got.Equal(p) {
		t.Fatalf("PolicyOf = %+v, %v; want %+v", got, err, p.Normalize())
	}
	var on uint32
	if err := k.maps.ZonesInUse.Lookup(uint32(0), &on); err != nil || on != 1 {
		t.Fatalf("zones_in_use = %d, %v with a zone restricting zones", on, err)
	}
	if err := k.SetPolicy(5, ZonePolicy{}); err != nil {
		t.Fatal(err)
	}
	if err := k.maps.ZonesInUse.Lookup(uint32(0), &on); err != nil || on != 0 {
		t.Fatalf("zones_in_use = %d, %v without one", on, err)
	}
}

// allowed_zones on the backend's connect hook (cgroup/connect4 on the
// fallback, lsm/socket_connect on bpf-lsm) and on the shared packet
// programs, with loopback addresses registered to zones.
func TestZoneNet(t *testing.T) {
	t.Run("fallback", func(t *testing.T) {
		requireRoot(t)
		k, _ := testKernel(t, false)
		testZoneNet(t, k)
	})
	t.Run("lsm", func(t *testing.T) { testZoneNet(t, lsmKernel(t)) })
}

func testZoneNet(t *testing.T, k *Kernel) {
	const a, b = 5, 6
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bAddr := netip.MustParseAddr("127.0.0.6")
	must(k.SetPolicy(a, ZonePolicy{ZonesRestricted: true}))
	must(k.SetPolicy(b, ZonePolicy{ZonesRestricted: true}))
	cgA, cgB := testCgroup(t, "zone-a"), testCgroup(t, "zone-b")
	idA, err := k.AddMember(a, cgA)
	must(err)
	idB, err := k.AddMember(b, cgB)
	must(err)
	// a's member sends from 127.0.0.1: a packet to another zone's member
	// must come from an address of its own zone.
	must(k.SetMemberAddrs(a, idA, []netip.Addr{netip.MustParseAddr("127.0.0.1")}))
	must(k.SetMemberAddrs(b, idB, []netip.Addr{bAddr}))
	closed := freePort(t)
	ap := func(addr netip.Addr) string { return netip.AddrPortFrom(addr, closed).String() }
	in := workload{cgroup: cgA}

	// a's member to b's address: EPERM, the event names b.
	in.expect(t, "EPERM", "connect", ap(bAddr))
	ev := drainUntil(t, k, func(e Event) bool { return e.Control == ControlEgress && e.TargetZone == b })
	if ev.Zone != a || ev.Addr.Addr() != bAddr || ev.Errno == 0 {
		t.Errorf("egress event: %+v", ev)
	}
	in.expect(t, "EPERM", "sendto", ap(bAddr))
	in.expect(t, "EPERM", "connect6", netip.AddrPortFrom(netip.AddrFrom16(bAddr.As16()), closed).String())
	in.expect(t, "EPERM", "raw", bAddr.String()) // the packet program (no CAP_NET_RAW needed as root here)
	// An address of no zone: allowed_egress, absent here.
	in.expect(t, "ECONNREFUSED", "connect", ap(netip.MustParseAddr("127.0.0.7")))

	// a allows b: the connect goes through (and is refused by nobody listening).
	must(k.SetPolicy(a, ZonePolicy{ZonesRestricted: true, NetPeers: []uint32{b}}))
	in.expect(t, "ECONNREFUSED", "connect", ap(bAddr))

	// Ingress: a's member serves; a client whose source address is b's
	// reaches it only once a allows b.
	dial := func() error {
		cmd := in.command(t, "serve")
		out, err := cmd.StdoutPipe()
		must(err)
		must(cmd.Start())
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		port, err := bufio.NewReader(out).ReadString('\n')
		must(err)
		// Long enough for a loaded TCG guest to answer a SYN; a dropped
		// SYN waits it out.
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: bAddr.AsSlice()}}
		c, err := d.Dial("tcp4", "127.0.0.1:"+strings.TrimSpace(port))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(); err != nil {
		t.Fatalf("a allows b, yet a client at b's address cannot reach a's server: %v", err)
	}
	must(k.SetPolicy(a, ZonePolicy{ZonesRestricted: true}))
	if err := dial(); err == nil {
		t.Fatal("a no longer allows b, yet a client at b's address reached a's server")
	}
	ev = drainUntil(t, k, func(e Event) bool { return e.Control == ControlIngress })
	if ev.Zone != a || ev.TargetZone != b || ev.Hook != HookSkbIngress || ev.Addr.Addr() != bAddr {
		t.Errorf("ingress event: %+v", ev)
	}
	c, err := k.Counters(a)
	must(err)
	if c.Denies[ControlIngress] == 0 || c.Denies[ControlEgress] < 3 {
		t.Errorf("counters of a: ingress denies %d, egress denies %d", c.Denies[ControlIngress], c.Denies[ControlEgress])
	}
	// No zone restricts zones any more: no member's packet is parsed for it.
	must(k.SetPolicy(a, ZonePolicy{}))
	must(k.SetPolicy(b, ZonePolicy{}))
	var on uint32
	if err := k.maps.ZonesInUse.Lookup(uint32(0), &on); err != nil || on != 0 {
		t.Fatalf("zones_in_use = %d, %v", on, err)
	}
	in.expect(t, "ECONNREFUSED", "connect", ap(bAddr))
}
