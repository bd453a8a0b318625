package bpf

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/uring"
)

func TestOpenPinsAndReuses(t *testing.T) {
	requireRoot(t)
	k, pinDir := testKernel(t, false)

	for _, name := range []string{"zone_by_cgid", "zone_policy", "egress4", "egress6", "egress_deny4", "egress_deny6", "egress_deny4_keys", "egress_deny6_keys", "zone_peers",
		"file_deny", "file_deny_names", "file_deny_chains", "zone_counters", "member_netns", "skb_event_limit", "events", "link_observe_sys_exit",
		"prog_egress_connect4", "prog_egress_connect6", "prog_egress_sendmsg4", "prog_egress_sendmsg6",
		"prog_egress_skb"} {
		if !exists(filepath.Join(pinDir, name)) {
			t.Errorf("%s not pinned", name)
		}
	}
	id := func(k *Kernel) ebpf.MapID {
		info, err := k.maps.ZonePolicy.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		return id
	}
	before := id(k)
	if err := k.SetPolicy(3, ZonePolicy{EgressRestricted: true}); err != nil {
		t.Fatal(err)
	}
	k.Close()

	k2, err := Open(pinDir, "", false)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer k2.Close()
	if after := id(k2); after != before {
		t.Errorf("reopen created a new zone_policy map (id %d, was %d)", after, before)
	}
	if _, err := k2.PolicyOf(3); err != nil {
		t.Errorf("policy did not survive reopen: %v", err)
	}
	att, err := k2.Attached()
	if err != nil {
		t.Fatal(err)
	}
	observers := observerSections(t)
	if want := observers; !slices.Equal(att, want) {
		t.Errorf("Attached() = %q, want only the observer %q while no zone learns", att, want)
	}

	// The learning tracepoints run for every exec, fork, exit, signal and
	// capability check of the host: attached only while a zone learns.
	if err := k2.SetPolicy(4, ZonePolicy{Mode: ModeLearn}); err != nil {
		t.Fatal(err)
	}
	learning := append(slices.Clone(observers), "tp_btf/sched_process_exec", "tp_btf/sched_process_fork", "tp_btf/sched_process_exit", "tp_btf/signal_generate")
	if LearnsCapabilities(pinDir, false) {
		learning = append(learning, "tp_btf/cap_capable")
	}
	if att, err = k2.Attached(); err != nil || !slices.Equal(att, learning) {
		t.Errorf("while zone 4 learns: Attached() = %q, %v; want %q", att, err, learning)
	}
	if err := k2.SetPolicy(4, ZonePolicy{}); err != nil {
		t.Fatal(err)
	}
	if att, err = k2.Attached(); err != nil || !slices.Equal(att, observers) {
		t.Errorf("after learning: Attached() = %q, %v; want only the observer", att, err)
	}

	if _, err := Open(pinDir, "", true); err == nil || !strings.Contains(err.Error(), "fallback backend") {
		t.Errorf("opening the other backend on the same pins: err = %v, want a backend conflict", err)
	}

	// The anchor keeps the cgroup attach types' static keys enabled: an
	// empty cgroup holding one link of each egress program.
	anchor := anchorCgroup(pinDir)
	if procs, err := os.ReadFile(filepath.Join(anchor, "cgroup.procs")); err != nil || len(procs) != 0 {
		t.Errorf("anchor cgroup %s: procs %q, err %v; want an empty cgroup", anchor, procs, err)
	}
	for _, name := range []string{"egress_connect4", "egress_connect6", "egress_sendmsg4", "egress_sendmsg6"} {
		if !exists(filepath.Join(anchorDir(pinDir), name)) {
			t.Errorf("anchor link %s not pinned", name)
		}
	}

	if err := k2.Remove(); err != nil {
		t.Fatal(err)
	}
	if exists(pinDir) {
		t.Errorf("Remove left %s", pinDir)
	}
	if exists(anchor) {
		t.Errorf("Remove left the anchor cgroup %s", anchor)
	}
}

// An anchor cgroup whose pin directory is gone (pins removed by hand) is
// removed by the next install of any root.
func TestInstallSweepsOrphanAnchors(t *testing.T) {
	requireRoot(t)
	orphan := filepath.Join(UnifiedMountpoint(), fmt.Sprintf("rauha-test-orphan-%d.anchor", os.Getpid()))
	if err := os.Mkdir(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(orphan) })
	_, _ = testKernel(t, false)
	if exists(orphan) {
		t.Errorf("the orphan anchor %s outlived an install", orphan)
	}
}

// A map whose pin was removed is pinned afresh by the next Open, but the
// installed programs still use the old one: CheckPrograms (and so Attached,
// which verify reports) must name that, since no policy push reaches them.
func TestCheckProgramsFindsRepinnedMap(t *testing.T) {
	requireRoot(t)
	k, pinDir := testKernel(t, false)
	if err := k.CheckPrograms(); err != nil {
		t.Fatalf("fresh install: %v", err)
	}
	k.Close()
	if err := os.Remove(filepath.Join(pinDir, "zone_by_cgid")); err != nil {
		t.Fatal(err)
	}
	k2, err := Open(pinDir, "", false)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer k2.Close()
	if err := k2.CheckPrograms(); err == nil || !strings.Contains(err.Error(), "not pinned here") {
		t.Errorf("CheckPrograms after re-pinning zone_by_cgid: err = %v, want a map that is not pinned here", err)
	}
	if _, err := k2.Attached(); err == nil {
		t.Error("Attached() passed with programs on an unpinned map")
	}
}

// A failed Open removes the pins it made and nothing else. The failure is
// provoked after the maps are pinned: something that is not a link sits
// where the observer's link pin belongs.
func TestOpenFailureRemovesItsPins(t *testing.T) {
	requireRoot(t)
	pinDir := filepath.Join(bpffsRoot, fmt.Sprintf("rauha-test-failed-open-%d", os.Getpid()))
	t.Cleanup(func() { _ = os.RemoveAll(pinDir) })
	if err := ensurePinDir(pinDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(linkPin(pinDir, rauhaProgObserveSysExit), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(pinDir, "", false); err == nil {
		t.Fatal("Open succeeded with a bogus link pin")
	}
	entries, _ := os.ReadDir(pinDir)
	if len(entries) != 1 || entries[0].Name() != "link_"+rauhaProgObserveSysExit {
		t.Errorf("after the failed Open the pin directory holds %v, want only the bogus entry", entries)
	}
}

// Where BPF-LSM programs are refused or never run, Open(lsm) says so and
// pins nothing.
func TestOpenLSMRefused(t *testing.T) {
	requireRoot(t)
	pinDir := filepath.Join(bpffsRoot, fmt.Sprintf("rauha-test-refused-%d", os.Getpid()))
	t.Cleanup(func() { _ = RemovePins(pinDir) })
	k, err := Open(pinDir, "", true)
	if err == nil {
		k.Close()
		t.Skip("BPF-LSM works on this kernel; nothing to refuse")
	}
	entries, _ := os.ReadDir(pinDir)
	if len(entries) != 0 {
		t.Errorf("refused Open left pins: %v", entries)
	}
}

func TestProbe(t *testing.T) {
	requireRoot(t)
	lsm, err := Probe()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BPF-LSM usable: %v", lsm)
	// vmtest.sh boots kernels with and without bpf in lsm=.
	switch os.Getenv("RAUHA_EXPECT_LSM") {
	case "1":
		if !lsm {
			t.Fatal("RAUHA_EXPECT_LSM=1 but the probe found BPF-LSM unusable")
		}
	case "0":
		if lsm {
			t.Fatal("RAUHA_EXPECT_LSM=0 but the probe found BPF-LSM usable")
		}
	}
}

func TestPolicyRoundTripAndUpdate(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)

	p := ZonePolicy{
		Mode:             ModeAudit,
		EgressRestricted: true,
		Egress: []EgressRule{
			{Prefix: netip.MustParsePrefix("10.1.2.3/8"), Port: 443}, // masked on the way in
			{Prefix: netip.MustParsePrefix("::1/128")},
			{Prefix: netip.MustParsePrefix("::ffff:192.168.0.0/112"), Port: 53}, // mapped -> IPv4
		},
		CapDeny:             1<<unix.CAP_SYS_ADMIN | 1<<unix.CAP_NET_RAW,
		DenyCrossZoneSignal: true,
		SignalFrom:          []uint32{9, 4, 4},
		PtraceFrom:          []uint32{4},
		FileDenies: []FileDeny{
			{Dev: unix.Mkdev(8, 1), Ino: 42, Mask: FileOpen},
			{Dev: unix.Mkdev(8, 1), Ino: 42, Mask: FileExec},
			{Dev: unix.Mkdev(259, 1048575), Ino: 7, Mask: FileExec},
		},
		FileMounts: true,
	}
	if err := k.SetPolicy(5, p); err != nil {
		t.Fatal(err)
	}
	got, err := k.PolicyOf(5)
	if err != nil {
		t.Fatal(err)
	}
	want := ZonePolicy{
		Mode:             ModeAudit,
		EgressRestricted: true,
		Egress: []EgressRule{
			{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 443},
			{Prefix: netip.MustParsePrefix("192.168.0.0/16"), Port: 53},
			{Prefix: netip.MustParsePrefix("::1/128")},
		},
		CapDeny:             1<<unix.CAP_SYS_ADMIN | 1<<unix.CAP_NET_RAW,
		DenyCrossZoneSignal: true,
		SignalFrom:          []uint32{4, 9},
		PtraceFrom:          []uint32{4},
		FileDenies: []FileDeny{
			{Dev: unix.Mkdev(8, 1), Ino: 42, Mask: FileOpen | FileExec},
			{Dev: unix.Mkdev(259, 1048575), Ino: 7, Mask: FileExec},
		},
		FileMounts: true,
	}
	if !got.Equal(want) {
		t.Errorf("PolicyOf:\n got %+v\nwant %+v", got, want.Normalize())
	}
	if !got.Equal(p) {
		t.Error("PolicyOf result not Equal to the policy that was set")
	}

	// Another zone's entries are untouched by updates of zone 5.
	other := ZonePolicy{EgressRestricted: true, Egress: []EgressRule{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 443}}, SignalFrom: []uint32{5}}
	if err := k.SetPolicy(6, other); err != nil {
		t.Fatal(err)
	}

	narrowed := ZonePolicy{EgressRestricted: true, Egress: []EgressRule{{Prefix: netip.MustParsePrefix("::1/128"), Port: 22}}}
	if err := k.SetPolicy(5, narrowed); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.PolicyOf(5); !got.Equal(narrowed) {
		t.Errorf("after narrowing: got %+v, want %+v", got, narrowed)
	}
	if got, _ := k.PolicyOf(6); !got.Equal(other) {
		t.Errorf("zone 6 changed by zone 5's update: %+v", got)
	}

	cg := testCgroup(t, "policy")
	cgid, err := k.AddMember(5, cg)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.DeletePolicy(5); err == nil {
		t.Error("DeletePolicy succeeded while the zone has a member")
	}
	if err := k.RemoveMember("", cgid); err != nil {
		t.Fatal(err)
	}
	if err := k.DeletePolicy(5); err != nil {
		t.Fatal(err)
	}
	if _, err := k.PolicyOf(5); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("PolicyOf after delete: %v, want ErrNoPolicy", err)
	}
	// Zone 6 let zone 5 signal it; a zone reusing id 5 must not inherit that.
	if got, _ := k.PolicyOf(6); len(got.SignalFrom) != 0 {
		t.Errorf("zone 6 still lets deleted zone 5 signal it: %+v", got)
	}
}

func TestRestrictive(t *testing.T) {
	audit := uint32(rauhaPolicyFlagPOLICY_AUDIT)
	egress := uint32(rauhaPolicyFlagPOLICY_EGRESS_RESTRICTED)
	a := &rauhaPolicy{Flags: audit, CapDeny: 1}
	b := &rauhaPolicy{Flags: audit | egress, CapDeny: 2}
	if got := restrictive(a, b); got.Flags != audit|egress || got.CapDeny != 3 {
		t.Errorf("restrictive(audit, audit+egress) = %+v", got)
	}
	if got := restrictive(a, &rauhaPolicy{}); got.Flags&audit != 0 {
		t.Errorf("audit and enforce merged to audit: %+v", got)
	}
	if got := restrictive(nil, &rauhaPolicy{Flags: audit}); got.Flags != uint32(rauhaPolicyFlagPOLICY_MISSING_FLAGS) {
		t.Errorf("missing entry not treated as the missing-policy default: %+v", got)
	}
}

func listen(t *testing.T, network, addr string) uint16 {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

func TestFallbackEgress(t *testing.T) {
	requireRoot(t)
	k, pinDir := testKernel(t, false)
	const zone = 7
	port4 := listen(t, "tcp4", "127.0.0.1:0")
	port6 := listen(t, "tcp6", "[::1]:0")
	closed := freePort(t)
	ap := func(addr string, port uint16) string {
		return netip.AddrPortFrom(netip.MustParseAddr(addr), port).String()
	}

	policy := ZonePolicy{
		EgressRestricted: true,
		Egress: []EgressRule{
			{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: port4},
			{Prefix: netip.MustParsePrefix("127.0.0.2/32")}, // any port
			{Prefix: netip.MustParsePrefix("::1/128"), Port: port6},
		},
	}
	if err := k.SetPolicy(zone, policy); err != nil {
		t.Fatal(err)
	}
	cg := testCgroup(t, "egress")
	cgid, err := k.AddMember(zone, cg)
	if err != nil {
		t.Fatal(err)
	}
	att, err := k.Attached()
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range []string{"cgroup/connect4", "cgroup/connect6", "cgroup/sendmsg4", "cgroup/sendmsg6"} {
		if want := sec + " cgroup=" + itoa(cgid); !slices.Contains(att, want) {
			t.Errorf("Attached() = %q, missing %q", att, want)
		}
	}

	in := workload{cgroup: cg}
	in.expect(t, "ok", "connect", ap("127.0.0.1", port4))
	in.expect(t, "EPERM", "connect", ap("127.0.0.1", closed))
	in.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.2", closed))
	in.expect(t, "ok", "connect", ap("::1", port6))
	in.expect(t, "EPERM", "connect", ap("::1", closed))
	in.expect(t, "ok", "connect6", ap("::ffff:127.0.0.1", port4)) // mapped: the IPv4 list decides
	in.expect(t, "EPERM", "connect6", ap("::ffff:127.0.0.1", closed))
	in.expect(t, "ok", "sendto", ap("127.0.0.1", port4))
	in.expect(t, "EPERM", "sendto", ap("127.0.0.1", closed))
	in.expect(t, "EPERM", "sendto6", ap("::1", closed))
	// In a network namespace registered as the member's own, loopback is
	// the zone's own: not egress. (lo is down there, so an allowed connect
	// fails in routing instead.) In any other, it is egress.
	holder := workload{cgroup: cg, netns: true}.start(t)
	ns := "/proc/" + strconv.Itoa(holder) + "/ns/net"
	if err := k.SetMemberNetns(cgid, ns); err != nil {
		t.Fatal(err)
	}
	in.expect(t, "ECONNREFUSED", "in-netns", ns, "connect", ap("127.0.0.1", closed))
	in.expect(t, "ECONNREFUSED", "in-netns", ns, "connect", ap("::1", closed))
	in.expect(t, "EPERM", "in-netns", ns, "connect", ap("10.11.12.13", 80))
	workload{cgroup: cg, netns: true}.expect(t, "EPERM", "connect", ap("127.0.0.1", closed))
	const denials = 7

	host := workload{}
	host.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.1", closed))
	host.expect(t, "ok", "sendto", ap("127.0.0.1", closed))

	ev := drainUntil(t, k, func(e Event) bool {
		return e.Hook == HookConnect4 && e.Addr.Port() == closed && e.Addr.Addr() == netip.MustParseAddr("127.0.0.1")
	})
	if ev.Zone != zone || ev.Control != ControlEgress || ev.Verdict != VerdictDenied || ev.Errno != unix.EPERM || ev.CgroupID != cgid {
		t.Errorf("connect4 deny event: %+v", ev)
	}
	c, err := k.Counters(zone)
	if err != nil {
		t.Fatal(err)
	}
	if c.Denies[ControlEgress] != denials || c.Checks[ControlEgress] < 13 {
		t.Errorf("counters: checks %d denies %d, want ≥13 and %d", c.Checks[ControlEgress], c.Denies[ControlEgress], denials)
	}

	// Audit mode: allowed, reported as audited.
	policy.Mode = ModeAudit
	if err := k.SetPolicy(zone, policy); err != nil {
		t.Fatal(err)
	}
	in.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.1", closed))
	ev = drainUntil(t, k, func(e Event) bool { return e.Verdict == VerdictAudited })
	if ev.Errno != 0 || ev.Addr.Port() != closed || ev.Zone != zone {
		t.Errorf("audit event: %+v", ev)
	}

	// Narrowing takes effect.
	policy.Mode = ModeEnforce
	policy.Egress = policy.Egress[1:]
	if err := k.SetPolicy(zone, policy); err != nil {
		t.Fatal(err)
	}
	in.expect(t, "EPERM", "connect", ap("127.0.0.1", port4))

	// Membership ends: the cgroup is unaffected again and its links are gone.
	if err := k.RemoveMember(cg, 0); err != nil {
		t.Fatal(err)
	}
	in.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.1", closed))
	expectMemberGone(t, k, pinDir, cgid)
}

// expectMemberGone checks what RemoveMember leaves of cgroup cgid: no
// pins, no cgroup link in Attached.
func expectMemberGone(t *testing.T, k *Kernel, pinDir string, cgid uint64) {
	t.Helper()
	if exists(memberDir(pinDir, cgid)) {
		t.Error("member pins left after RemoveMember")
	}
	if att, _ := k.Attached(); slices.ContainsFunc(att, func(s string) bool { return strings.Contains(s, "cgroup=") }) {
		t.Errorf("cgroup links still attached after RemoveMember: %q", att)
	}
}

// A member whose cgroup was removed first (as delete does) only has pins
// left to remove; a new cgroup of the same name is another cgroup, and
// its links are not the old member's.
func TestRemoveMemberOfRemovedCgroup(t *testing.T) {
	requireRoot(t)
	k, pinDir := testKernel(t, false)
	if err := k.SetPolicy(3, ZonePolicy{EgressRestricted: true}); err != nil {
		t.Fatal(err)
	}
	cg := testCgroup(t, "removed")
	cgid, err := k.AddMember(3, cg)
	if err != nil {
		t.Fatal(err)
	}
	if cgroupRemoved(cg, cgid) {
		t.Fatal("cgroupRemoved on a live cgroup")
	}
	removeCgroup(t, cg)
	if !cgroupRemoved(cg, cgid) {
		t.Fatal("cgroupRemoved false after rmdir")
	}
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	if !cgroupRemoved(cg, cgid) {
		t.Fatal("a new cgroup of the same name counts as the old one")
	}
	if err := k.RemoveMember(cg, cgid); err != nil {
		t.Fatal(err)
	}
	if regs, err := k.Members(); err != nil || len(regs) != 0 {
		t.Errorf("Members() = %v, %v; want none", regs, err)
	}
	expectMemberGone(t, k, pinDir, cgid)
}

// A cgroup with the egress programs attached but no registration (the
// windows inside AddMember/RemoveMember) fails closed.
func TestFallbackEgressFailsClosedWhileUnregistered(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	cg := testCgroup(t, "unregistered")
	cgid, err := CgroupID(cg)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.attachMember(cg, cgid); err != nil {
		t.Fatal(err)
	}
	workload{cgroup: cg}.expect(t, "EPERM", "connect", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String())
}

// A process killed between pinning a member's links and registering it
// leaves a member pin directory no registration names: PruneMemberPins
// detaches and removes it, and leaves registered and kept members alone.
func TestPruneMemberPins(t *testing.T) {
	requireRoot(t)
	k, pinDir := testKernel(t, false)
	if err := k.SetPolicy(4, ZonePolicy{EgressRestricted: true}); err != nil {
		t.Fatal(err)
	}
	attachOnly := func(name string) uint64 {
		cg := testCgroup(t, name)
		cgid, err := CgroupID(cg)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.attachMember(cg, cgid); err != nil {
			t.Fatal(err)
		}
		return cgid
	}
	orphan, kept := attachOnly("orphan"), attachOnly("kept")
	member, err := k.AddMember(4, testCgroup(t, "member"))
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := k.PruneMemberPins(func(cgid uint64) bool { return cgid == kept })
	if err != nil || !slices.Equal(pruned, []uint64{orphan}) {
		t.Fatalf("PruneMemberPins = %v, %v; want [%d]", pruned, err, orphan)
	}
	if exists(memberDir(pinDir, orphan)) {
		t.Error("the orphan's pin directory is left")
	}
	att, err := k.Attached()
	if err != nil {
		t.Fatal(err)
	}
	for cgid, want := range map[uint64]bool{orphan: false, kept: true, member: true} {
		if exists(memberDir(pinDir, cgid)) != want {
			t.Errorf("pin directory of cgroup %d: exists = %v, want %v", cgid, !want, want)
		}
		if got := slices.ContainsFunc(att, func(s string) bool { return strings.HasSuffix(s, " cgroup="+itoa(cgid)) }); got != want {
			t.Errorf("links of cgroup %d attached = %v, want %v (%q)", cgid, got, want, att)
		}
	}
	if again, err := k.PruneMemberPins(func(uint64) bool { return false }); err != nil || !slices.Equal(again, []uint64{kept}) {
		t.Errorf("second prune = %v, %v; want [%d]", again, err, kept)
	}
}

// Pins outlive the process that made them: a second handle sees the
// member attached and enforcing after the first one is closed.
func TestEnforcementOutlivesHandle(t *testing.T) {
	requireRoot(t)
	k, pinDir := testKernel(t, false)
	if err := k.SetPolicy(8, ZonePolicy{EgressRestricted: true}); err != nil {
		t.Fatal(err)
	}
	cg := testCgroup(t, "outlive")
	if _, err := k.AddMember(8, cg); err != nil {
		t.Fatal(err)
	}
	k.Close()
	workload{cgroup: cg}.expect(t, "EPERM", "connect", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String())
	k2, err := Open(pinDir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if c, _ := k2.Counters(8); c.Denies[ControlEgress] != 1 {
		t.Errorf("denies = %d, want 1", c.Denies[ControlEgress])
	}
}

// observed is what the observer tests share: a zone with no rules and a
// member cgroup, and a directory nobody may write holding a file nobody
// may read (secret) and a copy of the test binary nobody may run.
type observed struct {
	k               *Kernel
	pinDir          string
	zone            uint32
	dir, secret     string
	inside, outside workload
}

func newObserved(t *testing.T, zone uint32, name string) observed {
	t.Helper()
	requireRoot(t)
	k, pinDir := testKernel(t, false)
	if err := k.SetPolicy(zone, ZonePolicy{}); err != nil {
		t.Fatal(err)
	}
	cg := testCgroup(t, name)
	if _, err := k.AddMember(zone, cg); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rauha-bpf-"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	// `go test` keeps the test binary where nobody cannot reach it.
	exe := filepath.Join(dir, "helper")
	copyFile(t, testBinary(t), exe, 0o755)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	return observed{k: k, pinDir: pinDir, zone: zone, dir: dir, secret: secret,
		inside: workload{cgroup: cg, cred: nobody, exe: exe}, outside: workload{cred: nobody, exe: exe}}
}

func TestObserver(t *testing.T) {
	o := newObserved(t, 9, "observer")
	k, zone, dir, secret, inside, outside := o.k, o.zone, o.dir, o.secret, o.inside, o.outside

	// The same denial outside the zone is not reported.
	outside.expect(t, "EACCES", "open", secret)
	inside.expect(t, "EACCES", "open", secret)
	ev := drainUntil(t, k, func(e Event) bool { return e.Control == ControlFile })
	if ev.Zone != zone || ev.Verdict != VerdictObserved || ev.Errno != unix.EACCES || ev.Path != secret ||
		ev.UID != 65534 || ev.Syscall != unix.SYS_OPENAT || ev.Hook != HookSysExit {
		t.Errorf("open event: %+v", ev)
	}

	inside.expect(t, "EPERM", "kill", "1", "0")
	ev = drainUntil(t, k, func(e Event) bool { return e.Control == ControlSignal })
	if ev.TargetPid != 1 || ev.Arg != 0 || ev.Errno != unix.EPERM || ev.Syscall != unix.SYS_KILL {
		t.Errorf("kill event: %+v", ev)
	}

	c, err := k.Counters(zone)
	if err != nil {
		t.Fatal(err)
	}
	if c.Observed[ControlFile] != 1 || c.Observed[ControlSignal] != 1 {
		t.Errorf("observed counters: %+v", c.Observed)
	}

	// New and removed names and truncation, refused in a directory the
	// task may not write (as Landlock and the read-only mounts refuse them
	// in denied and read_only trees): each is reported with the name.
	for _, tc := range []struct {
		args []string
		nr   int32
		path string
	}{
		{[]string{"mkdir", filepath.Join(dir, "d")}, unix.SYS_MKDIRAT, filepath.Join(dir, "d")},
		{[]string{"unlink", secret}, unix.SYS_UNLINKAT, secret},
		{[]string{"rename", secret, secret + ".new"}, unix.SYS_RENAMEAT, secret},
		{[]string{"symlink", "/x", filepath.Join(dir, "l")}, unix.SYS_SYMLINKAT, filepath.Join(dir, "l")},
		{[]string{"truncate", secret}, unix.SYS_TRUNCATE, secret},
	} {
		inside.expect(t, "EACCES", tc.args...)
		ev := drainUntil(t, k, func(e Event) bool { return e.Control == ControlFile })
		if ev.Zone != zone || ev.Errno != unix.EACCES || ev.Hook != HookSysExit || int32(ev.Syscall) != tc.nr || ev.Path != tc.path {
			t.Errorf("%v: event %+v, want syscall %d on %s", tc.args, ev, tc.nr, tc.path)
		}
	}
}

// A zone task's io_uring requests denied by permissions (as Landlock
// denies them) fail in their completion, not in a syscall: the io_uring
// observer reports them, with the path the request named, and not those of
// tasks outside zones.
func TestIoUringObserver(t *testing.T) {
	o := newObserved(t, 11, "iouring")
	if !exists(linkPin(o.pinDir, rauhaProgObserveIoUringComplete)) && !exists(linkPin(o.pinDir, rauhaProgObserveIoUringCompleteRes)) {
		t.Fatal("no io_uring completion program attached")
	}
	k, zone, secret, inside, outside := o.k, o.zone, o.secret, o.inside, o.outside
	exe := o.inside.exe

	outside.expect(t, "EACCES", "iouring-open", secret)
	inside.expect(t, "ok", "iouring-open", exe) // allowed: no event
	inside.expect(t, "EACCES", "iouring-open", secret)
	ev := drainUntil(t, k, func(e Event) bool { return e.Control == ControlFile })
	if ev.Zone != zone || ev.Hook != HookIoUring || ev.Verdict != VerdictObserved || ev.Errno != unix.EACCES ||
		ev.Path != secret || ev.IoUringOp != uring.OpOpenat || ev.UID != 65534 {
		t.Errorf("io_uring openat event: %+v", ev)
	}
	// Two paths: the old and the new one. dir is not writable by nobody.
	inside.expect(t, "EACCES", "iouring-rename", secret, secret+".new")
	ev = drainUntil(t, k, func(e Event) bool { return e.Control == ControlFile })
	if ev.Hook != HookIoUring || ev.Errno != unix.EACCES || ev.Path != secret || ev.NewPath != secret+".new" || ev.IoUringOp != uring.OpRenameat {
		t.Errorf("io_uring renameat event: %+v", ev)
	}
	evs, err := k.DrainEvents(100, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Control == ControlFile {
			t.Errorf("another file event: %+v", e)
		}
	}
	c, err := k.Counters(zone)
	if err != nil {
		t.Fatal(err)
	}
	if c.Observed[ControlFile] != 2 {
		t.Errorf("observed file counter = %d, want 2", c.Observed[ControlFile])
	}
	// What submission kept is gone with the completions.
	var key uint64
	if err := k.maps.IouringPaths.NextKey(nil, &key); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("iouring_paths keeps an entry (%#x) after the completions: %v", key, err)
	}
}

// observerSections are the observer programs the kernel runs, as Attached
// lists them: the io_uring programs where it has their tracepoints.
func observerSections(t *testing.T) []string {
	t.Helper()
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	has := func(name string) bool {
		var td *btf.Typedef
		return kernel.TypeByName(name, &td) == nil
	}
	out := []string{"tp_btf/sys_exit"}
	for _, tp := range []string{"io_uring_submit_req", "io_uring_submit_sqe", "io_uring_complete"} {
		if has("btf_trace_" + tp) {
			out = append(out, "tp_btf/"+tp)
		}
	}
	return out
}

// The fallback holds file rules with mounts, which deny some changes with
// EXDEV, EBUSY and ENOENT: the observer reports those for a zone with
// FileMounts, with the operation and both names of a link or rename, and
// nothing for a zone without it.
func TestObserverMountErrors(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	const zone, other = 11, 12
	for id, p := range map[uint32]ZonePolicy{zone: {FileMounts: true}, other: {}} {
		if err := k.SetPolicy(id, p); err != nil {
			t.Fatal(err)
		}
	}
	cg, cgOther := testCgroup(t, "mounts"), testCgroup(t, "nomounts")
	for cg, id := range map[string]uint32{cg: zone, cgOther: other} {
		if _, err := k.AddMember(id, cg); err != nil {
			t.Fatal(err)
		}
	}
	// A file bound onto itself, and a tmpfs over a directory, as the
	// fallback holds a denied file and a denied directory.
	dir := t.TempDir()
	file, masked := filepath.Join(dir, "denied"), filepath.Join(dir, "masked")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(masked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(file, file, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(file, unix.MNT_DETACH) })
	if err := unix.Mount("tmpfs", masked, "tmpfs", 0, "size=16k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(masked, unix.MNT_DETACH) })
	// A denied file deeper than an event's path holds: its paths follow
	// the event (struct long_event), whole.
	deepRel := filepath.Join(strings.Repeat("d", 200), strings.Repeat("e", 200), "denied")
	deep := filepath.Join(dir, deepRel)
	if err := os.MkdirAll(filepath.Dir(deep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(deep, deep, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(deep, unix.MNT_DETACH) })

	for _, tc := range []struct {
		args          []string
		errno         string
		op            FileOp
		path, newPath string
	}{
		{[]string{"link", file, filepath.Join(dir, "new")}, "EXDEV", FileOpLink, file, filepath.Join(dir, "new")},
		{[]string{"rename", file, filepath.Join(dir, "moved")}, "EBUSY", FileOpRename, file, filepath.Join(dir, "moved")},
		{[]string{"unlink", file}, "EBUSY", FileOpUnlink, file, ""},
		{[]string{"rmdir", masked}, "EBUSY", FileOpRmdir, masked, ""},
		{[]string{"unix-connect", filepath.Join(masked, "s")}, "ENOENT", FileOpUnixConnect, filepath.Join(masked, "s"), ""},
		{[]string{"link", deep, filepath.Join(dir, "new")}, "EXDEV", FileOpLink, deep, filepath.Join(dir, "new")},
		{[]string{"renameat", dir, deepRel, "moved"}, "EBUSY", FileOpRename, deep, filepath.Join(dir, "moved")},
		{[]string{"unlink", deep}, "EBUSY", FileOpUnlink, deep, ""},
	} {
		// The zone without FileMounts first: its event would come first.
		workload{cgroup: cgOther}.expect(t, tc.errno, tc.args...)
		workload{cgroup: cg}.expect(t, tc.errno, tc.args...)
		ev := drainUntil(t, k, func(e Event) bool { return e.Op != 0 })
		if ev.Zone != zone || ev.Control != ControlFile || ev.Verdict != VerdictObserved || ev.Hook != HookSysExit ||
			unix.ErrnoName(ev.Errno) != tc.errno ||
			ev.Op != tc.op || ev.Path != tc.path || ev.NewPath != tc.newPath {
			t.Errorf("%v: event %+v; want zone %d, %s, %s, %q, %q", tc.args, ev, zone, tc.op, tc.errno, tc.path, tc.newPath)
		}
	}
	if c, err := k.Counters(zone); err != nil || c.Observed[ControlFile] != 8 {
		t.Errorf("observed file errors of the zone: %v, %v; want 8", c.Observed[ControlFile], err)
	}
	if c, err := k.Counters(other); err != nil || c.Observed[ControlFile] != 0 {
		t.Errorf("observed file errors of the zone without FileMounts: %v, %v; want 0", c.Observed[ControlFile], err)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// PolicyZones lists exactly the zones with a policy, in order, so that
// Prune finds every stale one without asking for each possible id.
func TestPolicyZones(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	ids, err := k.PolicyZones()
	if err != nil || len(ids) != 0 {
		t.Fatalf("fresh maps: %v, %v", ids, err)
	}
	for _, id := range []uint32{MaxZones - 1, 5, 3} {
		if err := k.SetPolicy(id, ZonePolicy{Mode: ModeEnforce}); err != nil {
			t.Fatal(err)
		}
	}
	if ids, err = k.PolicyZones(); err != nil || !slices.Equal(ids, []uint32{3, 5, MaxZones - 1}) {
		t.Fatalf("after three policies: %v, %v", ids, err)
	}
	if err := k.DeletePolicy(5); err != nil {
		t.Fatal(err)
	}
	if ids, err = k.PolicyZones(); err != nil || !slices.Equal(ids, []uint32{3, MaxZones - 1}) {
		t.Fatalf("after deleting zone 5: %v, %v", ids, err)
	}
}

// A zone id that comes back must not bring the grants other zones gave its
// previous owner: a deleted zone's removal cut short before DeletePolicy
// leaves them. WithdrawGrants removes exactly those, not the others' own
// entries or grants to other zones.
func TestWithdrawGrants(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	// Zone 6 lets zones 5 and 7 signal it; zone 8 lets zone 5 signal it.
	six := ZonePolicy{DenyCrossZoneSignal: true, SignalFrom: []uint32{5, 7}}
	eight := ZonePolicy{DenyCrossZoneSignal: true, SignalFrom: []uint32{5}}
	five := ZonePolicy{DenyCrossZoneSignal: true, SignalFrom: []uint32{7}}
	for id, p := range map[uint32]ZonePolicy{6: six, 8: eight, 5: five} {
		if err := k.SetPolicy(id, p); err != nil {
			t.Fatal(err)
		}
	}
	// Zone 5 is "deleted" without DeletePolicy: its id comes back.
	if err := k.WithdrawGrants(5); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[uint32][]uint32{6: {7}, 8: nil, 5: {7}} {
		got, err := k.PolicyOf(id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.SignalFrom, want) {
			t.Errorf("zone %d lets %v signal it after WithdrawGrants(5), want %v", id, got.SignalFrom, want)
		}
	}
	if err := k.WithdrawGrants(MaxZones); err == nil {
		t.Error("WithdrawGrants accepted an id out of range")
	}
}

// Names are validated before they reach the kernel's fixed-size key, and
// Normalize merges entries for the same name as PolicyOf returns them.
func TestFileNamesPolicy(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", "a\x00", strings.Repeat("x", FileNameMax+1)} {
		p := ZonePolicy{FileNames: []FileDenyName{{Dev: 1, Ino: 2, Name: name, Mask: FileOpen}}}
		if err := p.validate(1); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	p := ZonePolicy{FileNames: []FileDenyName{{Dev: 1, Ino: 2, Name: strings.Repeat("x", FileNameMax), Mask: FileOpen}}}
	if err := p.validate(1); err != nil {
		t.Error(err)
	}
	a := ZonePolicy{FileNames: []FileDenyName{{Dev: 1, Ino: 2, Name: "s", Mask: FileOpen}, {Dev: 1, Ino: 2, Name: "s", Mask: FileExec}}}
	b := ZonePolicy{FileNames: []FileDenyName{{Dev: 1, Ino: 2, Name: "s", Mask: FileOpen | FileExec}}}
	if !a.Equal(b) || a.Equal(ZonePolicy{}) {
		t.Errorf("Normalize: %+v", a.Normalize())
	}
	s := b.state(3)
	if s.policy.Flags&uint32(rauhaPolicyFlagPOLICY_FILE_NAMES) == 0 || len(s.names) != 1 {
		t.Errorf("state: %+v", s)
	}
	if got := s.zonePolicy(); !got.Equal(b) {
		t.Errorf("round trip: %+v, want %+v", got, b)
	}
}

// Chains are validated, written as links that share their common prefix,
// and read back from the links as they were pushed.
func TestFileChainsPolicy(t *testing.T) {
	for _, c := range []FileDenyChain{
		{Dev: 1, Ino: 2, Names: []string{"a"}, Mask: FileOpen},
		{Dev: 1, Ino: 2, Names: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, Mask: FileOpen},
		{Dev: 1, Ino: 2, Names: []string{"a", ".."}, Mask: FileOpen},
		{Dev: 1, Ino: 2, Names: []string{"a", strings.Repeat("x", FileNameMax+1)}, Mask: FileOpen},
		{Dev: 0, Ino: 2, Names: []string{"a", "b"}, Mask: FileOpen},
		{Dev: 1, Ino: 2, Names: []string{"a", "b"}},
	} {
		p := ZonePolicy{FileChains: []FileDenyChain{c}}
		if err := p.validate(1); err == nil {
			t.Errorf("chain %+v accepted", c)
		}
	}
	p := ZonePolicy{FileChains: []FileDenyChain{
		{Dev: 1, Ino: 2, Names: []string{"a", "b", "secret"}, Mask: FileOpen},
		{Dev: 1, Ino: 2, Names: []string{"a", "b", "key"}, Mask: FileExec},
		{Dev: 1, Ino: 2, Names: []string{"a", "b"}, Mask: FileChange},
		{Dev: 1, Ino: 2, Names: []string{"a", "b", "c", "d", "e", "f", "g", "h"}, Mask: FileOpen},
	}}
	if err := p.validate(1); err != nil {
		t.Fatal(err)
	}
	s := p.state(3)
	// a, b, secret, key and c..h: the prefix a/b is written once.
	if s.policy.Flags&uint32(rauhaPolicyFlagPOLICY_FILE_CHAINS) == 0 || len(s.chains) != 10 {
		t.Errorf("state: flags %#x, %d links", s.policy.Flags, len(s.chains))
	}
	first := s.chains[nameKeyOf(3, kernelDev(1), 2, "a")]
	if first.Mask != 0 || first.Next != chainNode(1, 2, []string{"a"}) {
		t.Errorf("first link %+v", first)
	}
	b := s.chains[nameKeyOf(3, 0, first.Next, "b")]
	if b.Mask != uint32(FileChange) || b.Next == 0 {
		t.Errorf("link b %+v", b)
	}
	if got := s.zonePolicy(); !got.Equal(p) {
		t.Errorf("round trip: %+v, want %+v", got.FileChains, p.Normalize().FileChains)
	}
	// A missing link in the middle: the chains through it are not read back.
	delete(s.chains, nameKeyOf(3, 0, first.Next, "b"))
	if got := s.zonePolicy(); len(got.FileChains) != 0 {
		t.Errorf("chains through a missing link read back: %+v", got.FileChains)
	}
}

// denied_egress: destinations denied whatever the allow-list says, in a
// zone that restricts nothing else too, for connect, mapped addresses,
// datagrams and raw packets; one that is not listed stays reachable.
func TestFallbackEgressDenies(t *testing.T) {
	requireRoot(t)
	k, _ := testKernel(t, false)
	const zone = 8
	open := listen(t, "tcp4", "127.0.0.1:0")
	closed := freePort(t)
	ap := func(addr string, port uint16) string {
		return netip.AddrPortFrom(netip.MustParseAddr(addr), port).String()
	}
	policy := ZonePolicy{EgressDeny: []EgressRule{
		{Prefix: netip.MustParsePrefix("127.0.0.3/32")},             // any port
		{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: open}, // one port
		{Prefix: netip.MustParsePrefix("::1/128"), Port: closed},
	}}
	if err := k.SetPolicy(zone, policy); err != nil {
		t.Fatal(err)
	}
	if got, err := k.PolicyOf(zone); err != nil || !got.Equal(policy) {
		t.Fatalf("PolicyOf = %+v, %v; want %+v", got, err, policy.Normalize())
	}
	cg := testCgroup(t, "egressdeny")
	cgid, err := k.AddMember(zone, cg)
	if err != nil {
		t.Fatal(err)
	}
	in, host := workload{cgroup: cg}, workload{}
	host.expect(t, "ok", "connect", ap("127.0.0.1", open))
	in.expect(t, "EPERM", "connect", ap("127.0.0.1", open))
	in.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.1", closed))
	in.expect(t, "EPERM", "connect", ap("127.0.0.3", closed))
	in.expect(t, "EPERM", "connect6", ap("::ffff:127.0.0.3", closed)) // mapped: the IPv4 list decides
	in.expect(t, "EPERM", "sendto", ap("127.0.0.3", closed))
	in.expect(t, "EPERM", "connect", ap("::1", closed))
	in.expect(t, "ok", "sendto6", ap("::1", open))

	ev := drainUntil(t, k, func(e Event) bool {
		return e.Hook == HookConnect4 && e.Addr.Addr() == netip.MustParseAddr("127.0.0.3")
	})
	if ev.Zone != zone || ev.Control != ControlEgress || ev.Verdict != VerdictDenied || ev.Errno != unix.EPERM || ev.CgroupID != cgid {
		t.Errorf("connect4 deny event: %+v", ev)
	}
	host.expect(t, "ok", "raw", "127.0.0.3")
	in.expect(t, "EPERM", "raw", "127.0.0.3")
	in.expect(t, "ok", "raw", "127.0.0.2")
	ev = drainUntil(t, k, func(e Event) bool { return e.Hook == HookSkbEgress })
	if ev.Zone != zone || ev.Addr.Addr() != netip.MustParseAddr("127.0.0.3") || ev.Proto != unix.IPPROTO_ICMP {
		t.Errorf("raw packet deny event: %+v", ev)
	}

	// The deny-list wins over an allow-list that covers the address.
	policy.EgressRestricted = true
	policy.Egress = []EgressRule{{Prefix: netip.MustParsePrefix("127.0.0.0/8")}}
	if err := k.SetPolicy(zone, policy); err != nil {
		t.Fatal(err)
	}
	in.expect(t, "EPERM", "connect", ap("127.0.0.3", closed))
	in.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.2", closed))

	// Dropped from the policy, the address is reachable again.
	if err := k.SetPolicy(zone, ZonePolicy{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.PolicyOf(zone); len(got.EgressDeny) != 0 {
		t.Errorf("deny entries left after the update: %+v", got.EgressDeny)
	}
	in.expect(t, "ECONNREFUSED", "connect", ap("127.0.0.3", closed))
	if err := k.RemoveMember(cg, 0); err != nil {
		t.Fatal(err)
	}
}
