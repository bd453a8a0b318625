package bpf

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The packet program judges what leaves, whatever the socket: raw and
// ping sockets, source-routed datagrams to an allowed address, and keeps
// the replies of inbound TCP connections.
func TestEgressPackets(t *testing.T) {
	requireRoot(t)
	for _, lsm := range []bool{false} {
		k, _ := testKernel(t, lsm)
		const zone = 9
		allowed := listen(t, "tcp4", "127.0.0.1:0")
		if err := k.SetPolicy(zone, ZonePolicy{
			EgressRestricted: true,
			Egress:           []EgressRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: allowed}},
		}); err != nil {
			t.Fatal(err)
		}
		cg := testCgroup(t, "packets")
		cgid, err := k.AddMember(zone, cg)
		if err != nil {
			t.Fatal(err)
		}
		att, err := k.Attached()
		if err != nil {
			t.Fatal(err)
		}
		if want := "cgroup_skb/egress cgroup=" + itoa(cgid); !slices.Contains(att, want) {
			t.Fatalf("Attached() = %q, missing %q", att, want)
		}

		in, host := workload{cgroup: cg}, workload{}
		host.expect(t, "ok", "raw", "127.0.0.2")
		in.expect(t, "EPERM", "raw", "127.0.0.2")
		ev := drainUntil(t, k, func(e Event) bool { return e.Hook == HookSkbEgress })
		if ev.Zone != zone || ev.CgroupID != cgid || ev.Proto != unix.IPPROTO_ICMP || ev.Errno != unix.EPERM ||
			ev.Addr.Addr() != netip.MustParseAddr("127.0.0.2") || ev.SourceRouted {
			t.Errorf("raw socket event: %+v", ev)
		}

		// An unregistered netns: its loopback is not the zone's own.
		workload{netns: true}.expect(t, "ok", "ping", "127.0.0.1")
		workload{cgroup: cg, netns: true}.expect(t, "EPERM", "ping", "127.0.0.1")

		// The sendmsg hook allows the address passed; the packet goes to
		// the first hop of its source route.
		dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), allowed).String()
		host.expect(t, "ok", "lsrr", dst, "127.0.0.3")
		in.expect(t, "EPERM", "lsrr", dst, "127.0.0.3")
		ev = drainUntil(t, k, func(e Event) bool { return e.Hook == HookSkbEgress && e.SourceRouted })
		if ev.Proto != unix.IPPROTO_UDP {
			t.Errorf("source-routed event: %+v", ev)
		}

		// A server in the zone answers a client it may not connect to.
		expectServed(t, in)

		// Registered as the member's own netns, loopback is allowed there.
		holder := workload{cgroup: cg, netns: true}.start(t)
		ns := "/proc/" + strconv.Itoa(holder) + "/ns/net"
		if err := k.SetMemberNetns(cgid, ns); err != nil {
			t.Fatal(err)
		}
		if got, err := k.MemberNetns(cgid); err != nil || got == 0 {
			t.Fatalf("MemberNetns = %d, %v", got, err)
		}
		in.expect(t, "ok", "in-netns", ns, "raw", "127.0.0.1")
		in.expect(t, "EPERM", "raw", "127.0.0.2") // the host's loopback still is not

		c, err := k.Counters(zone)
		if err != nil {
			t.Fatal(err)
		}
		if c.Denies[ControlEgress] < 4 {
			t.Errorf("egress denies %d, want ≥ 4", c.Denies[ControlEgress])
		}
		if err := k.RemoveMember(cg, 0); err != nil {
			t.Fatal(err)
		}
		if got, _ := k.MemberNetns(cgid); got != 0 {
			t.Errorf("RemoveMember left the member's netns registered")
		}
		in.expect(t, "ok", "raw", "127.0.0.2")
	}
}

// expectServed runs a "serve" helper in w and checks that a client on the
// host gets its answer: the SYN-ACK and the data leave the zone.
func expectServed(t *testing.T, w workload) {
	t.Helper()
	cmd := w.command(t, "serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	port, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp4", "127.0.0.1:"+strings.TrimSpace(port))
	if err != nil {
		t.Fatalf("connect to the zone's server: %v", err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hi" {
		t.Errorf("reply of the zone's server: %q, %v", got, err)
	}
}

// The packet programs keep a cgroup's zone and its last allowed
// destination (verdict_slots) until net_gen changes: a policy update, an
// address registration and a member's move to another zone each reach an
// open socket at its next packet. A connected UDP socket sends without
// passing connect4 or sendmsg4 again, so only the packet program judges.
func TestPacketVerdictCache(t *testing.T) {
	t.Run("fallback", func(t *testing.T) {
		requireRoot(t)
		k, _ := testKernel(t, false)
		testPacketVerdictCache(t, k)
	})
	t.Run("lsm", func(t *testing.T) { testPacketVerdictCache(t, lsmKernel(t)) })
}

func testPacketVerdictCache(t *testing.T, k *Kernel) {
	const zone, other, peer = 31, 32, 33
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	must(err)
	t.Cleanup(func() { srv.Close() })
	port := uint16(srv.LocalAddr().(*net.UDPAddr).Port)
	lo := netip.MustParseAddr("127.0.0.1")
	allow := ZonePolicy{EgressRestricted: true, Egress: []EgressRule{{Prefix: netip.PrefixFrom(lo, 32), Port: port}}}
	must(k.SetPolicy(zone, allow))
	must(k.SetPolicy(other, ZonePolicy{EgressRestricted: true}))
	cg := testCgroup(t, "verdict-cache")
	cgid, err := k.AddMember(zone, cg)
	must(err)

	cmd := workload{cgroup: cg}.command(t, "udp-stream", netip.AddrPortFrom(lo, port).String())
	stdin, stdout := spawn(t, cmd)
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("udp-stream did not connect: %q %v", line, err)
	}
	n := 0
	// send makes the helper send one datagram; want is its outcome, and
	// "ok" also means that the listener got it.
	send := func(want, why string) {
		t.Helper()
		n++
		msg := "datagram-" + strconv.Itoa(n)
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("udp-stream: %v", err)
		}
		if got := strings.TrimSpace(line); got != want {
			t.Fatalf("%s: send got %s, want %s", why, got, want)
		}
		if want != "ok" {
			return
		}
		buf := make([]byte, 64)
		for {
			must(srv.SetReadDeadline(time.Now().Add(time.Second)))
			m, err := srv.Read(buf)
			if err != nil {
				t.Fatalf("%s: the listener got no datagram: %v", why, err)
			}
			if string(buf[:m]) == msg {
				return
			}
		}
	}
	send("ok", "allowed")
	send("ok", "allowed again (kept)")

	must(k.SetPolicy(zone, ZonePolicy{EgressRestricted: true}))
	send("EPERM", "after an update that withdrew the destination")
	ev := drainUntil(t, k, func(e Event) bool { return e.Hook == HookSkbEgress })
	if ev.Zone != zone || ev.CgroupID != cgid || ev.Proto != unix.IPPROTO_UDP || ev.Addr != netip.AddrPortFrom(lo, port) {
		t.Errorf("event of the withdrawn destination: %+v", ev)
	}
	must(k.SetPolicy(zone, allow))
	send("ok", "after an update that allowed it again")

	// allowed_zones: an address of another zone's member is judged by it,
	// not by allowed_egress, from the moment it is registered.
	zonesToo := allow
	zonesToo.ZonesRestricted = true
	must(k.SetPolicy(zone, zonesToo))
	send("ok", "allowed_zones, the destination in no zone")
	must(k.SetMemberAddrs(peer, 1<<40, []netip.Addr{lo}))
	send("EPERM", "after the destination was registered to a zone not allowed")
	must(k.SetMemberAddrs(peer, 1<<40, nil))
	send("ok", "after the destination was unregistered")

	// A member that leaves is not judged; one that joins another zone is
	// judged by that zone's policy.
	must(k.RemoveMember(cg, 0))
	send("ok", "after the member left its zone")
	_, err = k.AddMember(other, cg)
	must(err)
	send("EPERM", "after the member joined a zone that allows nothing")
}
