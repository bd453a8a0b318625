// Package bpf is Rauha's kernel enforcement with eBPF: the programs in
// *.bpf.c, and the loader that installs them, pins them so that enforcement
// outlives every rauha process (there is no daemon), and reads and writes
// the zone maps they share.
//
// Two backends share one set of maps:
//   - bpf-lsm: LSM programs on file_open, bprm_check_security,
//     ptrace_access_check, task_kill, socket_connect, socket_sendmsg and
//     capable, plus a cgroup-escape guard inside file_open;
//   - fallback, for kernels that refuse LSM programs (Landlock enforces files,
//     exec and signals there): cgroup/connect4|6 and cgroup/sendmsg4|6 on
//     every member's cgroup for the egress allow-list;
//   - both: cgroup_skb/egress on every member's cgroup, which judges each
//     packet by its real destination (raw and ICMP sockets, source routes);
//     a sys_exit observer that reports what Landlock denied. libzone
//     enforces filesystem and exec rules with Landlock on either backend,
//     and Landlock runs before the BPF LSM (lsm= order), so its denials never
//     reach lsm/file_open: without the observer they would leave no event.
//
// Pin layout under the pin directory: the maps by name; global links as
// link_<program>; the fallback's cgroup programs as prog_<program>; each
// member's cgroup links as members/<cgroup id>/<program>.
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -type event -type policy -type counters -type egress4_key -type egress6_key -type file_key -type peer_key -type limits -type skb_events -type policy_flag -type peer_bit -type file_access -type control -type hook -type verdict rauha rauha.bpf.c -- -I./headers -Wall -Werror
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 probe probe.bpf.c -- -I./headers -Wall -Werror

// The generated *_x86_bpfel.{go,o} are committed, so `go build` needs no
// clang; `go generate ./bpf` rebuilds them with clang and libbpf-dev's
// headers. headers/vmlinux.h is committed too (`bpftool btf dump file
// /sys/kernel/btf/vmlinux format c`, from a 6.18 kernel): every field access
// is CO-RE relocated against the running kernel's BTF, so regenerating it
// elsewhere would only add churn.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// DefaultPinDir is where production pins live; tests use their own.
const DefaultPinDir = "/sys/fs/bpf/rauha"

// MaxZones bounds zone ids: 1 ≤ zone < MaxZones (zone 0 is the host).
const MaxZones = uint32(rauhaLimitsMAX_ZONES)

// hookProgram is one program of the object and how it is attached.
type hookProgram struct {
	name      string // function name in the C source
	lsm       bool   // part of the bpf-lsm backend, else of the fallback
	shared    bool   // part of both backends (lsm is ignored)
	perMember bool   // attached to every member's cgroup, else once globally
	attach    ebpf.AttachType
}

var hookPrograms = []hookProgram{
	{name: rauhaProgEgressConnect4, perMember: true, attach: ebpf.AttachCGroupInet4Connect},
	{name: rauhaProgEgressConnect6, perMember: true, attach: ebpf.AttachCGroupInet6Connect},
	{name: rauhaProgEgressSendmsg4, perMember: true, attach: ebpf.AttachCGroupUDP4Sendmsg},
	{name: rauhaProgEgressSendmsg6, perMember: true, attach: ebpf.AttachCGroupUDP6Sendmsg},
	{name: rauhaProgEgressSkb, shared: true, perMember: true, attach: ebpf.AttachCGroupInetEgress},
	{name: rauhaProgObserveSysExit, shared: true, attach: ebpf.AttachTraceRawTp},
	{name: rauhaProgZoneFileOpen, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneBprmCheck, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZonePtrace, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneTaskKill, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneSocketConnect, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneSocketSendmsg, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneCapable, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneMmapFile, lsm: true, attach: ebpf.AttachLSMMac},
	{name: rauhaProgZoneFileMprotect, lsm: true, attach: ebpf.AttachLSMMac},
}

// backendPrograms are the programs a backend installs.
func backendPrograms(lsm bool) []hookProgram {
	var out []hookProgram
	for _, p := range hookPrograms {
		if p.shared || p.lsm == lsm {
			out = append(out, p)
		}
	}
	return out
}

// ownPrograms are the programs only this backend installs: their pins tell
// which backend a pin directory holds.
func ownPrograms(lsm bool) []hookProgram {
	var out []hookProgram
	for _, p := range backendPrograms(lsm) {
		if !p.shared {
			out = append(out, p)
		}
	}
	return out
}

func linkPin(dir, prog string) string { return filepath.Join(dir, "link_"+prog) }
func progPin(dir, prog string) string { return filepath.Join(dir, "prog_"+prog) }
func membersDir(dir string) string    { return filepath.Join(dir, "members") }
func memberDir(dir string, cgid uint64) string {
	return filepath.Join(membersDir(dir), strconv.FormatUint(cgid, 10))
}

// Kernel is an open handle on the pinned enforcement state. Its methods
// serialise against other rauha processes with a lock on the pin directory.
type Kernel struct {
	pinDir string
	lsm    bool
	maps   rauhaMaps
}

// Open installs the programs of one backend (lsm: bpf-lsm, else the
// fallback) and the shared maps under pinDir, or reuses what is already
// pinned there, so calling it from every rauha command is cheap. A pin
// directory holds one backend: switching needs Remove first. Installing
// the bpf-lsm programs runs Probe first. When it fails, it removes what it
// pinned itself.
func Open(pinDir string, lsm bool) (_ *Kernel, err error) {
	pinDir = filepath.Clean(pinDir)
	if err := ensurePinDir(pinDir); err != nil {
		return nil, err
	}
	unlock, err := lockPinDir(pinDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := checkBackend(pinDir, lsm); err != nil {
		return nil, err
	}
	if k, err := openInstalled(pinDir, lsm); k != nil || err != nil {
		return k, err
	}
	spec, err := loadRauha()
	if err != nil {
		return nil, fmt.Errorf("parse the embedded BPF object: %w", err)
	}
	// The .bss holds only the declarations that keep types in BTF.
	delete(spec.Maps, ".bss")
	clear(spec.Variables)

	var created []string // pins this call made; removed again if it fails
	defer func() {
		if err != nil {
			for _, p := range slices.Backward(created) {
				_ = os.Remove(p)
			}
		}
	}()
	for name := range spec.Maps {
		if p := filepath.Join(pinDir, name); !exists(p) {
			created = append(created, p)
		}
	}

	// Load only the programs of this backend that are not pinned yet.
	var missing []hookProgram
	want := map[string]bool{}
	for _, p := range backendPrograms(lsm) {
		pin := linkPin(pinDir, p.name)
		if p.perMember {
			pin = progPin(pinDir, p.name)
		}
		if !exists(pin) {
			missing = append(missing, p)
			want[p.name] = true
		}
	}
	for name := range spec.Programs {
		if !want[name] {
			delete(spec.Programs, name)
		}
	}
	// A kernel booted without bpf in lsm= loads and attaches LSM programs
	// but never runs them: Attached() would list hooks that enforce nothing.
	if lsm && len(missing) > 0 {
		ok, err := Probe()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errors.New("BPF-LSM programs do not run on this kernel (Probe); use the fallback backend")
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Maps: ebpf.MapOptions{PinPath: pinDir},
	})
	if err != nil {
		return nil, fmt.Errorf("load BPF programs and maps into %s (on a kernel that refuses them, use the other backend): %w", pinDir, err)
	}
	defer coll.Close()

	kern := &Kernel{pinDir: pinDir, lsm: lsm}
	if err := coll.Assign(&kern.maps); err != nil {
		return nil, fmt.Errorf("take the loaded maps: %w", err)
	}
	defer func() {
		if err != nil {
			kern.Close()
		}
	}()

	for _, p := range missing {
		pin, err := pinProgram(pinDir, p, coll.Programs[p.name])
		if err != nil {
			return nil, err
		}
		created = append(created, pin)
	}
	// Programs pinned before this call must at least open (whether they
	// use these maps is CheckPrograms', which verify and reconcile run).
	for _, p := range backendPrograms(lsm) {
		prog, err := kern.pinnedProgram(p)
		if err != nil {
			return nil, err
		}
		prog.Close()
	}
	if err := kern.attachAnchor(); err != nil {
		return nil, errors.Join(err, removeAnchor(pinDir))
	}
	return kern, nil
}

// openInstalled opens a pin directory that already holds every map and
// every program of the backend, without parsing the embedded object: its
// BTF decoding was the largest part of every create and delete, in time
// and memory. It returns nil, nil when something is missing, for Open to
// install it. The maps' compatibility with the object was checked by the
// Open that pinned them, and a map whose key or value size changed refuses
// every update. Neither the programs nor their map ids are read here (that
// was 3 ms of every create and delete): CheckPrograms, which verify runs,
// checks that the pinned programs use exactly these maps, and the fallback's
// cgroup programs are opened when a member is attached.
func openInstalled(pinDir string, lsm bool) (_ *Kernel, err error) {
	for _, p := range backendPrograms(lsm) {
		pin := linkPin(pinDir, p.name)
		if p.perMember {
			pin = progPin(pinDir, p.name)
		}
		if !exists(pin) {
			return nil, nil
		}
	}
	kern := &Kernel{pinDir: pinDir, lsm: lsm}
	defer func() {
		if err != nil {
			kern.Close()
		}
	}()
	// rauhaMaps names every pinned map in its ebpf tags (what Assign uses).
	v := reflect.ValueOf(&kern.maps).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("ebpf")
		m, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, name), nil)
		if errors.Is(err, os.ErrNotExist) {
			kern.Close()
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("open pinned map %s: %w", name, err)
		}
		v.Field(i).Set(reflect.ValueOf(m))
	}
	return kern, nil
}

// pinProgram attaches a global program and pins its link, or pins a
// per-member program for AddMember to attach later.
func pinProgram(pinDir string, p hookProgram, prog *ebpf.Program) (string, error) {
	if p.perMember {
		pin := progPin(pinDir, p.name)
		if err := prog.Pin(pin); err != nil {
			return "", fmt.Errorf("pin program %s: %w", p.name, err)
		}
		return pin, nil
	}
	var l link.Link
	var err error
	if p.lsm {
		l, err = link.AttachLSM(link.LSMOptions{Program: prog})
	} else {
		l, err = link.AttachTracing(link.TracingOptions{Program: prog, AttachType: p.attach})
	}
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", p.name, err)
	}
	defer l.Close()
	pin := linkPin(pinDir, p.name)
	if err := l.Pin(pin); err != nil {
		return "", fmt.Errorf("pin link of %s (the program is detached again): %w", p.name, err)
	}
	return pin, nil
}

// CheckPrograms checks that the backend's pinned programs use the pinned
// maps: programs whose maps were unpinned would enforce a policy nobody can
// update any more.
func (k *Kernel) CheckPrograms() error {
	ours := map[ebpf.MapID]bool{}
	for _, m := range k.allMaps() {
		info, err := m.Info()
		if err != nil {
			return fmt.Errorf("inspect map %s: %w", m, err)
		}
		id, _ := info.ID()
		ours[id] = true
	}
	for _, p := range backendPrograms(k.lsm) {
		prog, err := k.pinnedProgram(p)
		if err != nil {
			return err
		}
		err = usesOnlyMaps(prog, ours)
		prog.Close()
		if err != nil {
			return fmt.Errorf("pinned program %s in %s: %w; run 'rauha zone reconcile'", p.name, k.pinDir, err)
		}
	}
	return nil
}

// pinnedProgram opens program p: a per-member program from its pin, a
// global one through its pinned link.
func (k *Kernel) pinnedProgram(p hookProgram) (*ebpf.Program, error) {
	if p.perMember {
		prog, err := ebpf.LoadPinnedProgram(progPin(k.pinDir, p.name), nil)
		if err != nil {
			return nil, fmt.Errorf("open pinned program %s: %w", p.name, err)
		}
		return prog, nil
	}
	l, err := link.LoadPinnedLink(linkPin(k.pinDir, p.name), nil)
	if err != nil {
		return nil, fmt.Errorf("open pinned link of %s: %w", p.name, err)
	}
	info, err := l.Info()
	l.Close()
	if err != nil {
		return nil, fmt.Errorf("inspect link of %s: %w", p.name, err)
	}
	prog, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		return nil, fmt.Errorf("open program of link %s: %w", p.name, err)
	}
	return prog, nil
}

func usesOnlyMaps(prog *ebpf.Program, ours map[ebpf.MapID]bool) error {
	info, err := prog.Info()
	if err != nil {
		return err
	}
	ids, ok := info.MapIDs()
	if !ok {
		return nil // kernel does not tell; nothing to check
	}
	for _, id := range ids {
		if ours[id] {
			continue
		}
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			return fmt.Errorf("inspect map %d: %w", id, err)
		}
		mi, err := m.Info()
		m.Close()
		// Read-only data sections (.rodata) are per program, never pinned.
		if err == nil && len(mi.Name) > 0 && mi.Name[0] == '.' {
			continue
		}
		return fmt.Errorf("uses map %d that is not pinned here", id)
	}
	return nil
}

func checkBackend(pinDir string, lsm bool) error {
	for _, p := range ownPrograms(!lsm) {
		pin := linkPin(pinDir, p.name)
		if p.perMember {
			pin = progPin(pinDir, p.name)
		}
		if exists(pin) {
			return fmt.Errorf("%s holds the %s backend (found %s); Remove it before opening the %s backend",
				pinDir, backendName(!lsm), filepath.Base(pin), backendName(lsm))
		}
	}
	return nil
}

func backendName(lsm bool) string {
	if lsm {
		return "bpf-lsm"
	}
	return "fallback"
}

func (k *Kernel) allMaps() []*ebpf.Map {
	m := &k.maps
	return []*ebpf.Map{m.ZoneByCgid, m.ZonePolicy, m.Egress4, m.Egress6, m.ZonePeers,
		m.FileDeny, m.ZoneCounters, m.MemberNetns, m.SkbEventLimit, m.Events}
}

// LSM reports which backend this handle was opened for.
func (k *Kernel) LSM() bool { return k.lsm }

// PinDir is the directory holding this handle's pins.
func (k *Kernel) PinDir() string { return k.pinDir }

// Close releases the file descriptors. Pins, and so enforcement, stay.
func (k *Kernel) Close() error {
	var errs []error
	for _, m := range k.allMaps() {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	k.maps = rauhaMaps{}
	return errors.Join(errs...)
}

// Remove unpins everything under the pin directory, which detaches every
// program of both backends and drops all zone state, then closes k.
func (k *Kernel) Remove() error {
	err := removePins(k.pinDir)
	return errors.Join(err, k.Close())
}

// Attached checks the programs (CheckPrograms), then lists what is attached
// right now, from the kernel's view of the pinned links: "<section>" for
// global programs (e.g. "lsm/file_open"), "<section> cgroup=<id>" for each
// member's cgroup programs. A cgroup link
// whose cgroup is gone is not attached and not listed.
func (k *Kernel) Attached() ([]string, error) {
	if err := k.CheckPrograms(); err != nil {
		return nil, err
	}
	spec, err := loadRauha()
	if err != nil {
		return nil, fmt.Errorf("parse the embedded BPF object: %w", err)
	}
	section := func(name string) string { return spec.Programs[name].SectionName }

	var out []string
	for _, p := range backendPrograms(k.lsm) {
		if p.perMember {
			continue
		}
		l, err := link.LoadPinnedLink(linkPin(k.pinDir, p.name), nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("open pinned link of %s: %w", p.name, err)
		}
		_, err = l.Info()
		l.Close()
		if err != nil {
			return nil, fmt.Errorf("inspect link of %s: %w", p.name, err)
		}
		out = append(out, section(p.name))
	}

	entries, err := os.ReadDir(membersDir(k.pinDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list member links: %w", err)
	}
	for _, e := range entries {
		for _, p := range backendPrograms(k.lsm) {
			if !p.perMember {
				continue
			}
			l, err := link.LoadPinnedLink(filepath.Join(membersDir(k.pinDir), e.Name(), p.name), nil)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("open link of %s for cgroup %s: %w", p.name, e.Name(), err)
			}
			info, err := l.Info()
			l.Close()
			if err != nil {
				return nil, fmt.Errorf("inspect link of %s for cgroup %s: %w", p.name, e.Name(), err)
			}
			if cg := info.Cgroup(); cg != nil && cg.CgroupId != 0 {
				out = append(out, fmt.Sprintf("%s cgroup=%d", section(p.name), cg.CgroupId))
			}
		}
	}
	return out, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
