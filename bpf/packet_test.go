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
