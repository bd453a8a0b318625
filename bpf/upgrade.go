package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// A rauha built from another BPF object (an upgrade, or a downgrade) finds
// programs pinned that are not its own: its Open replaces them while every
// member stays enforced, under the pin directory's lock:
//
//   - maps: a pinned map whose spec is compatible is reused as it is, with
//     every entry (cilium/ebpf's PinByName); one whose size or flags changed
//     but whose key and value did not is carried: a new map with the new
//     spec gets a copy of every entry before any program uses it, and takes
//     the old one's pin once every program has been replaced. Ring buffers
//     and per-CPU counters are carried empty (events still pending in the
//     old ring are lost, counters restart). A map whose key or value layout
//     changed cannot be carried without knowing how: Open fails with
//     ErrLayoutChanged, and the caller reinstalls from its own records.
//   - cgroup programs (the fallback's egress programs on every member and
//     on the anchor): each pinned link is switched to the new program in
//     place (BPF_LINK_UPDATE), atomically: no moment with no program and
//     none with two.
//   - global programs (the observer, the LSM hooks), whose links cannot be
//     updated: the new program is attached first and its link pinned, then
//     the old link is detached. For that moment both run: a denial may be
//     reported twice, never missed.
//
// What the older object pinned for programs this one does not have is
// detached (dropRetiredPrograms). The object record is written last, so a
// rauha killed half-way leaves a pin directory that the next Open upgrades
// again; no step ever detaches before its replacement is attached.

// ErrLayoutChanged is returned by Open when a pinned map's key or value
// size differs from the object's: its entries cannot be carried over.
var ErrLayoutChanged = errors.New("a pinned map's key or value layout differs from this rauha's")

// carriedMaps are the maps Open carries into new ones (see above).
type carriedMaps struct{ maps map[string]*ebpf.Map }

// carryMaps makes a new map, with the old one's entries, for every pinned
// map of spec that spec.Compatible refuses.
func carryMaps(pinDir string, spec *ebpf.CollectionSpec) (c carriedMaps, err error) {
	c.maps = map[string]*ebpf.Map{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	for name, ms := range spec.Maps {
		if ms.Pinning != ebpf.PinByName {
			continue
		}
		old, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, name), nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return c, fmt.Errorf("open pinned map %s: %w", name, err)
		}
		m, err := carryMap(ms, old)
		old.Close()
		if err != nil {
			return c, fmt.Errorf("pinned map %s: %w", name, err)
		}
		if m != nil {
			c.maps[name] = m
		}
	}
	return c, nil
}

// carryMap returns nil when old can be used as spec, else a new map.
func carryMap(spec *ebpf.MapSpec, old *ebpf.Map) (*ebpf.Map, error) {
	incompatible := spec.Compatible(old)
	if incompatible == nil {
		return nil, nil
	}
	if old.Type() != spec.Type || old.KeySize() != spec.KeySize || old.ValueSize() != spec.ValueSize {
		return nil, fmt.Errorf("%w (%v); run 'rauha zone reconcile' to reinstall", ErrLayoutChanged, incompatible)
	}
	fresh := spec.Copy()
	fresh.Pinning = ebpf.PinNone
	m, err := ebpf.NewMap(fresh)
	if err != nil {
		return nil, fmt.Errorf("create its replacement: %w", err)
	}
	switch spec.Type {
	case ebpf.RingBuf, ebpf.PerCPUArray, ebpf.PerCPUHash, ebpf.LRUCPUHash:
		return m, nil
	}
	key := make([]byte, spec.KeySize)
	val := make([]byte, spec.ValueSize)
	it := old.Iterate()
	for it.Next(&key, &val) {
		if err := m.Update(key, val, ebpf.UpdateAny); err != nil {
			m.Close()
			return nil, fmt.Errorf("copy an entry into its replacement: %w", err)
		}
	}
	if err := it.Err(); err != nil {
		m.Close()
		return nil, fmt.Errorf("read its entries: %w", err)
	}
	return m, nil
}

// pin moves each carried map to its name, replacing the old pin in one
// rename.
func (c carriedMaps) pin(pinDir string) error {
	for name, m := range c.maps {
		pin := filepath.Join(pinDir, name)
		tmp := pin + "_new" // bpffs refuses names with a dot
		_ = os.Remove(tmp)
		if err := m.Pin(tmp); err != nil {
			return fmt.Errorf("pin the new map %s: %w", name, err)
		}
		if err := os.Rename(tmp, pin); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("replace the pin of map %s: %w", name, err)
		}
	}
	return nil
}

func (c carriedMaps) close() {
	for _, m := range c.maps {
		m.Close()
	}
}

// replaceProgram puts prog in the place of the pinned program p of another
// object (see above).
func replaceProgram(pinDir string, p hookProgram, prog *ebpf.Program) error {
	switch {
	case p.perMember:
		return replaceCgroupProgram(pinDir, p, prog)
	case p.learning:
		if exists(linkPin(pinDir, p.name)) {
			if err := replaceLink(pinDir, p, prog); err != nil {
				return err
			}
		}
		return repinProgram(pinDir, p, prog)
	}
	return replaceLink(pinDir, p, prog)
}

// replaceLink puts a link of prog in the place of the pinned link of the
// global program p.
func replaceLink(pinDir string, p hookProgram, prog *ebpf.Program) error {
	pin := linkPin(pinDir, p.name)
	old, err := link.LoadPinnedLink(pin, nil)
	if err != nil {
		return fmt.Errorf("open pinned link of %s: %w", p.name, err)
	}
	defer old.Close()
	// A link pinned here by a replacement that was killed before the
	// rename is a second copy of the program: pin still runs one.
	tmp := pin + "_new"
	if err := detachPinned(tmp); err != nil {
		return err
	}
	l, err := attachGlobal(p, prog)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.Pin(tmp); err != nil {
		return fmt.Errorf("pin the new link of %s (the new program is detached again): %w", p.name, err)
	}
	if err := os.Rename(tmp, pin); err != nil {
		return errors.Join(fmt.Errorf("replace the link pin of %s: %w", p.name, err), detachPinned(tmp))
	}
	// Unpinned by the rename, the old link goes when its last descriptor
	// does; Detach ends it now where the link type supports it.
	if err := old.Detach(); err != nil && !errors.Is(err, link.ErrNotSupported) && !errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("detach the old %s: %w", p.name, err)
	}
	return nil
}

// replaceCgroupProgram switches every pinned cgroup link of p (members and
// anchor) to prog, then pins prog for the members still to come.
func replaceCgroupProgram(pinDir string, p hookProgram, prog *ebpf.Program) error {
	links, _ := filepath.Glob(filepath.Join(membersDir(pinDir), "*", p.name))
	links = append(links, filepath.Join(anchorDir(pinDir), p.name))
	for _, pin := range links {
		l, err := link.LoadPinnedLink(pin, nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("open link %s: %w", pin, err)
		}
		err = l.Update(prog)
		l.Close()
		// ENOLINK: the cgroup is gone, and its program with it; the pin
		// is what reconcile prunes.
		if err != nil && !errors.Is(err, unix.ENOLINK) {
			return fmt.Errorf("switch link %s to the new %s: %w", pin, p.name, err)
		}
	}
	return repinProgram(pinDir, p, prog)
}

// repinProgram replaces the pin of program p with prog.
func repinProgram(pinDir string, p hookProgram, prog *ebpf.Program) error {
	pin := progPin(pinDir, p.name)
	tmp := pin + "_new"
	_ = os.Remove(tmp)
	if err := prog.Pin(tmp); err != nil {
		return fmt.Errorf("pin the new program %s: %w", p.name, err)
	}
	if err := os.Rename(tmp, pin); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("replace the pin of program %s: %w", p.name, err)
	}
	return nil
}

// dropRetiredPrograms detaches and unpins what an older object pinned for
// programs this one no longer has (global links, cgroup programs and their
// member and anchor links): nothing would ever replace them. The other
// backend's programs are not retired (checkBackend refuses those pins).
func dropRetiredPrograms(pinDir string) error {
	known := map[string]bool{}
	for _, p := range hookPrograms {
		known[p.name] = true
	}
	var errs []error
	retired := func(pin, name string) {
		if !known[name] {
			errs = append(errs, detachPinned(pin))
		}
	}
	globals, _ := filepath.Glob(filepath.Join(pinDir, "link_*"))
	for _, pin := range globals {
		retired(pin, strings.TrimPrefix(filepath.Base(pin), "link_"))
	}
	cgroupLinks, _ := filepath.Glob(filepath.Join(membersDir(pinDir), "*", "*"))
	anchorLinks, _ := filepath.Glob(filepath.Join(anchorDir(pinDir), "*"))
	for _, pin := range append(cgroupLinks, anchorLinks...) {
		retired(pin, filepath.Base(pin))
	}
	progs, _ := filepath.Glob(filepath.Join(pinDir, "prog_*"))
	for _, pin := range progs {
		if !known[strings.TrimPrefix(filepath.Base(pin), "prog_")] {
			if err := os.Remove(pin); err != nil {
				errs = append(errs, fmt.Errorf("unpin %s: %w", pin, err))
			}
		}
	}
	return errors.Join(errs...)
}
