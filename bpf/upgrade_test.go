package bpf

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The hash pin directories record is the embedded object's: a stale one
// would make every rauha reinstall on every command, or never.
func TestObjectHashIsTheEmbeddedObjects(t *testing.T) {
	sum := sha256.Sum256(_RauhaBytes)
	if got := hex.EncodeToString(sum[:]); got != rauhaObjectSHA256 {
		t.Fatalf("rauhaObjectSHA256 = %s, the embedded object's sha256 is %s: run go generate ./bpf", rauhaObjectSHA256, got)
	}
}

// An older object, as far as the pins can tell: the same programs under
// another hash, or with a changed map spec.
func olderObject(edit func(*ebpf.CollectionSpec)) object {
	return object{
		load: func() (*ebpf.CollectionSpec, error) {
			spec, err := loadRauha()
			if err == nil && edit != nil {
				edit(spec)
			}
			return spec, err
		},
		hash: "0000000000000000000000000000000000000000000000000000000000000000",
	}
}

// startLoop starts a helper in w that repeats op on arg until the returned
// function is called; that returns what the attempts got ("map[EPERM:n]").
func startLoop(t *testing.T, w workload, op, arg string) func() string {
	t.Helper()
	cmd := w.command(t, op, arg)
	stdin, stdout := spawn(t, cmd)
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%s did not start: %q %v", op, line, err)
	}
	return func() string {
		stdin.Close()
		rest, _ := io.ReadAll(out)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(rest)), "ok"))
	}
}

// onlyOutcome: every attempt of a loop got want, and there were some.
func onlyOutcome(got, want string) bool {
	return strings.HasPrefix(got, "map["+want+":") && !strings.Contains(got, " ")
}

// linkProgram is the link id and program id of a pinned link.
func linkProgram(t *testing.T, pin string) (link.ID, ebpf.ProgramID) {
	t.Helper()
	l, err := link.LoadPinnedLink(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	return info.ID, info.Program
}

func pinnedProgramID(t *testing.T, pin string) ebpf.ProgramID {
	t.Helper()
	p, err := ebpf.LoadPinnedProgram(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

func mapID(t *testing.T, m *ebpf.Map) ebpf.MapID {
	t.Helper()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// upgradeFixture installs from old: zone 7 allows no egress, a member
// cgroup joins it. It returns the pin directory, the member's cgroup and
// cgroup id.
func upgradeFixture(t *testing.T, old object) (pinDir, root, cg string, cgid uint64) {
	t.Helper()
	requireRoot(t)
	root = t.TempDir()
	pinDir = filepath.Join(bpffsRoot, "rauha-test-"+strings.ReplaceAll(t.Name(), "/", "-")+"-"+itoa(uint64(os.Getpid())))
	t.Cleanup(func() {
		if err := RemovePins(pinDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	k, err := open(pinDir, root, false, old)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := k.SetPolicy(7, ZonePolicy{EgressRestricted: true}); err != nil {
		t.Fatal(err)
	}
	cg = testCgroup(t, "upgrade-"+strings.ReplaceAll(t.Name(), "/", "-"))
	if cgid, err = k.AddMember(7, cg); err != nil {
		t.Fatal(err)
	}
	return pinDir, root, cg, cgid
}

// A rauha built from another object replaces the pinned programs (the
// observer, the cgroup programs, every member's and the anchor's links)
// while a member keeps being denied the whole time: a process in it
// connects in a loop before, during and after the upgrade, and never once
// gets through. The maps, and so the zone's policy and membership, stay.
func TestUpgradeReplacesProgramsWithoutAGap(t *testing.T) {
	pinDir, root, cg, cgid := upgradeFixture(t, olderObject(nil))
	if got := installedObject(pinDir); got != olderObject(nil).hash {
		t.Fatalf("object record %q after the old install", got)
	}
	observer := linkPin(pinDir, rauhaProgObserveSysExit)
	memberLink := filepath.Join(memberDir(pinDir, cgid), rauhaProgEgressConnect4)
	anchorLink := filepath.Join(anchorDir(pinDir), rauhaProgEgressConnect4)
	_, oldObserver := linkProgram(t, observer)
	memberLinkID, oldMember := linkProgram(t, memberLink)
	_, oldAnchor := linkProgram(t, anchorLink)
	oldProg := pinnedProgramID(t, progPin(pinDir, rauhaProgEgressConnect4))

	// What an older object pinned for a program the new one does not have:
	// a cgroup program and a link of it on another cgroup.
	// (By id: a program loaded from its pin would move that pin.)
	prog, err := ebpf.NewProgramFromID(oldProg)
	if err != nil {
		t.Fatal(err)
	}
	retiredProg, retiredLink := progPin(pinDir, "retired"), filepath.Join(memberDir(pinDir, cgid), "retired")
	if err := prog.Pin(retiredProg); err != nil {
		t.Fatal(err)
	}
	rl, err := link.AttachCgroup(link.CgroupOptions{Path: testCgroup(t, "retired"), Attach: ebpf.AttachCGroupInet4Connect, Program: prog})
	if err != nil {
		t.Fatal(err)
	}
	if err := rl.Pin(retiredLink); err != nil {
		t.Fatal(err)
	}
	rl.Close()
	prog.Close()

	// The member connects to a closed port in a loop: EPERM while enforced,
	// ECONNREFUSED for any attempt that got past the programs.
	loop := startLoop(t, workload{cgroup: cg}, "connect-loop", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String())
	k, err := Open(pinDir, root, false)
	if err != nil {
		t.Fatalf("open with the new object: %v", err)
	}
	defer k.Close()
	if got := loop(); !onlyOutcome(got, "EPERM") {
		t.Fatalf("the member's connects during the upgrade: %s, want EPERM only", got)
	}

	if got := installedObject(pinDir); got != rauhaObjectSHA256 {
		t.Errorf("object record %q after the upgrade, want %s", got, rauhaObjectSHA256)
	}
	if got := RecordedRoot(pinDir); got != root {
		t.Errorf("root record %q, want %s", got, root)
	}
	if _, p := linkProgram(t, observer); p == oldObserver {
		t.Error("the observer still runs the old program")
	}
	id, p := linkProgram(t, memberLink)
	if p == oldMember {
		t.Error("the member's link still runs the old program")
	}
	if id != memberLinkID {
		t.Errorf("the member's link was replaced (id %d, was %d), not updated in place", id, memberLinkID)
	}
	if _, p := linkProgram(t, anchorLink); p == oldAnchor {
		t.Error("the anchor's link still runs the old program")
	}
	if p2 := pinnedProgramID(t, progPin(pinDir, rauhaProgEgressConnect4)); p2 == oldProg || p2 != p {
		t.Errorf("pinned program %d (was %d), want the one the member's link runs (%d)", p2, oldProg, p)
	}
	if exists(retiredProg) || exists(retiredLink) {
		t.Errorf("a retired program's pins are left: %v %v", exists(retiredProg), exists(retiredLink))
	}
	if matches, _ := filepath.Glob(filepath.Join(pinDir, "*_new")); len(matches) > 0 {
		t.Errorf("temporary pins left: %v", matches)
	}
	if err := k.CheckPrograms(); err != nil {
		t.Error(err)
	}
	if pol, err := k.PolicyOf(7); err != nil || !pol.EgressRestricted {
		t.Errorf("the zone's policy did not survive: %+v %v", pol, err)
	}
	if regs, err := k.Members(); err != nil || regs[cgid] != 7 {
		t.Errorf("membership did not survive: %v %v", regs, err)
	}
	// The new programs report: a denial after the upgrade is an event.
	workload{cgroup: cg}.expect(t, "EPERM", "connect", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String())
	drainUntil(t, k, func(e Event) bool { return e.Zone == 7 && e.Control == ControlEgress && e.Verdict == VerdictDenied })

	// Opening again with the same object is the cheap path: nothing moves.
	k.Close()
	k2, err := Open(pinDir, root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if _, again := linkProgram(t, memberLink); again != p {
		t.Errorf("a second open replaced the programs again (%d, was %d)", again, p)
	}
}

// A pin directory made before objects were recorded (no record at all)
// counts as another object: its programs are replaced once.
func TestUpgradeFromUnrecordedPins(t *testing.T) {
	pinDir, root, _, _ := upgradeFixture(t, embeddedObject)
	_, before := linkProgram(t, linkPin(pinDir, rauhaProgObserveSysExit))
	if err := os.Remove(filepath.Join(pinDir, objectRecord)); err != nil {
		t.Fatal(err)
	}
	k, err := Open(pinDir, root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, after := linkProgram(t, linkPin(pinDir, rauhaProgObserveSysExit)); after == before {
		t.Error("the observer of an unrecorded pin directory was not replaced")
	}
	if got := installedObject(pinDir); got != rauhaObjectSHA256 {
		t.Errorf("object record %q", got)
	}
}

// An object that kept the learning programs attached from install on
// pinned their links, not the programs: the upgrade pins the new programs
// and detaches the old links while no zone learns; learning attaches the
// new ones.
func TestUpgradeFromAttachedLearningPrograms(t *testing.T) {
	pinDir, root, _, _ := upgradeFixture(t, olderObject(nil))
	old := map[string]ebpf.ProgramID{}
	for _, p := range backendPrograms(false) {
		if !p.learning || !exists(progPin(pinDir, p.name)) {
			continue
		}
		prog, err := ebpf.LoadPinnedProgram(progPin(pinDir, p.name), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pinProgramLink(pinDir, p, prog); err != nil {
			t.Fatal(err)
		}
		prog.Close()
		if err := os.Remove(progPin(pinDir, p.name)); err != nil {
			t.Fatal(err)
		}
		_, old[p.name] = linkProgram(t, linkPin(pinDir, p.name))
	}
	if len(old) == 0 {
		t.Fatal("no learning program installed")
	}
	k, err := Open(pinDir, root, false)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for name, id := range old {
		if exists(linkPin(pinDir, name)) {
			t.Errorf("%s is still attached while no zone learns", name)
		}
		if now := pinnedProgramID(t, progPin(pinDir, name)); now == id {
			t.Errorf("%s: the old program %d is still pinned", name, id)
		}
		// Detached, the old program is freed once the kernel gets to it.
		gone := false
		for range 100 {
			prog, err := ebpf.NewProgramFromID(id)
			if err != nil {
				gone = true
				break
			}
			prog.Close()
			time.Sleep(20 * time.Millisecond)
		}
		if !gone {
			t.Errorf("%s: the old program %d is still loaded", name, id)
		}
	}
	if err := k.SetPolicy(3, ZonePolicy{Mode: ModeLearn}); err != nil {
		t.Fatal(err)
	}
	for name := range old {
		if _, p := linkProgram(t, linkPin(pinDir, name)); p != pinnedProgramID(t, progPin(pinDir, name)) {
			t.Errorf("%s: learning attached program %d, not the pinned one", name, p)
		}
	}
	if err := k.CheckPrograms(); err != nil {
		t.Error(err)
	}
}

// A map whose size changed (not its key or value) is carried into a new
// map with every entry before the new programs use it; one whose value
// layout changed cannot be, and Open says so without touching the pins.
func TestUpgradeCarriesAResizedMap(t *testing.T) {
	pinDir, root, cg, cgid := upgradeFixture(t, olderObject(func(s *ebpf.CollectionSpec) {
		s.Maps["zone_by_cgid"].MaxEntries = 1024
	}))
	old, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, "zone_by_cgid"), nil)
	if err != nil {
		t.Fatal(err)
	}
	oldID := mapID(t, old)
	old.Close()

	k, err := Open(pinDir, root, false)
	if err != nil {
		t.Fatalf("open with the new object: %v", err)
	}
	defer k.Close()
	if k.maps.ZoneByCgid.MaxEntries() != 4096 || mapID(t, k.maps.ZoneByCgid) == oldID {
		t.Errorf("zone_by_cgid: %d entries, id %d (old id %d); want the object's new map", k.maps.ZoneByCgid.MaxEntries(), mapID(t, k.maps.ZoneByCgid), oldID)
	}
	if regs, err := k.Members(); err != nil || regs[cgid] != 7 {
		t.Errorf("membership not carried: %v %v", regs, err)
	}
	if err := k.CheckPrograms(); err != nil {
		t.Errorf("programs after carrying a map: %v", err)
	}
	workload{cgroup: cg}.expect(t, "EPERM", "connect", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String())
}

func TestUpgradeRefusesAChangedLayout(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	pinDir := filepath.Join(bpffsRoot, "rauha-test-layout-"+itoa(uint64(os.Getpid())))
	t.Cleanup(func() {
		if err := RemovePins(pinDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	old := olderObject(func(s *ebpf.CollectionSpec) { s.Maps["zone_peers"].ValueSize = 8 })
	k, err := open(pinDir, root, false, old)
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	_, before := linkProgram(t, linkPin(pinDir, rauhaProgObserveSysExit))
	if _, err := Open(pinDir, root, false); !errors.Is(err, ErrLayoutChanged) {
		t.Fatalf("open with a changed value layout: %v, want ErrLayoutChanged", err)
	}
	if _, after := linkProgram(t, linkPin(pinDir, rauhaProgObserveSysExit)); after != before {
		t.Error("the refused upgrade replaced the observer")
	}
	if got := installedObject(pinDir); got != old.hash {
		t.Errorf("object record %q after a refused upgrade", got)
	}
}

// On bpf-lsm the hooks are global links, which cannot be updated in place:
// the new ones are attached before the old ones are detached, and a member
// denied a file keeps being denied throughout. Runs in the VM lane
// (bpf/vmtest.sh); this host refuses LSM programs.
func TestUpgradeLSM(t *testing.T) {
	requireRoot(t)
	if lsm, err := Probe(); err != nil || !lsm {
		if os.Getenv("RAUHA_EXPECT_LSM") == "1" {
			t.Fatalf("BPF-LSM unusable but RAUHA_EXPECT_LSM=1: %v", err)
		}
		t.Skip("BPF-LSM programs are refused on this kernel; run bpf/vmtest.sh")
	}
	root := t.TempDir()
	pinDir := filepath.Join(bpffsRoot, "rauha-test-upgrade-lsm-"+itoa(uint64(os.Getpid())))
	t.Cleanup(func() {
		if err := RemovePins(pinDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	k, err := open(pinDir, root, true, olderObject(nil))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, ino := statDevIno(t, file)
	if err := k.SetPolicy(9, ZonePolicy{FileDenies: []FileDeny{{Dev: dev, Ino: ino, Mask: FileOpen}}}); err != nil {
		t.Fatal(err)
	}
	cg := testCgroup(t, "upgrade-lsm")
	if _, err := k.AddMember(9, cg); err != nil {
		t.Fatal(err)
	}
	k.Close()
	// The global links; per-member programs (cgroup_skb/egress and
	// ingress) are linked to the member's cgroup instead, and the learning
	// ones are only pinned while no zone learns.
	var global, learning []hookProgram
	perMember := 0
	for _, p := range backendPrograms(true) {
		switch {
		case p.perMember:
			perMember++
		case p.learning:
			learning = append(learning, p)
		default:
			global = append(global, p)
		}
	}
	before := map[string]ebpf.ProgramID{}
	for _, p := range global {
		_, before[p.name] = linkProgram(t, linkPin(pinDir, p.name))
	}
	for _, p := range learning {
		before[p.name] = pinnedProgramID(t, progPin(pinDir, p.name))
	}

	loop := startLoop(t, workload{cgroup: cg}, "open-loop", file)
	k, err = Open(pinDir, root, true)
	if err != nil {
		t.Fatalf("open with the new object: %v", err)
	}
	defer k.Close()
	if got := loop(); !onlyOutcome(got, "EACCES") {
		t.Fatalf("the member's opens during the upgrade: %s, want EACCES only", got)
	}
	for _, p := range global {
		if _, now := linkProgram(t, linkPin(pinDir, p.name)); now == before[p.name] {
			t.Errorf("%s still runs the old program", p.name)
		}
	}
	for _, p := range learning {
		if now := pinnedProgramID(t, progPin(pinDir, p.name)); now == before[p.name] {
			t.Errorf("%s: the old program is still pinned", p.name)
		}
	}
	att, err := k.Attached()
	if err != nil {
		t.Fatal(err)
	}
	if len(att) != len(global)+perMember { // and the member's cgroup_skb links
		t.Errorf("Attached() = %q: old links left or new ones missing", att)
	}
	workload{cgroup: cg}.expect(t, "EACCES", "open", file)
	drainUntil(t, k, func(e Event) bool { return e.Zone == 9 && e.Hook == HookLSMFileOpen && e.Verdict == VerdictDenied })
}
