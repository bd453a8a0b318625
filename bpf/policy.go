package bpf

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Mode says whether a zone's denials are enforced or only reported.
type Mode uint8

const (
	ModeEnforce Mode = iota
	ModeAudit
	// ModeLearn denies nothing and records what the zone's workload does
	// (DrainLearned).
	ModeLearn
)

func (m Mode) String() string {
	switch m {
	case ModeAudit:
		return "audit"
	case ModeLearn:
		return "learn"
	}
	return "enforce"
}

// EgressRule allows (ZonePolicy.Egress) or denies (ZonePolicy.EgressDeny)
// connections from a zone to Prefix, on Port or, when Port is 0, on any
// port.
type EgressRule struct {
	Prefix netip.Prefix
	Port   uint16
}

// FileAccess is what a FileDeny denies.
type FileAccess uint32

const (
	FileOpen = FileAccess(rauhaFileAccessFILE_DENY_OPEN)
	FileExec = FileAccess(rauhaFileAccessFILE_DENY_EXEC)
	// FileChange denies metadata changes (chmod, chown, utimes, truncate,
	// xattrs) and new names (link, rename): read_only. FileOpen implies it.
	FileChange = FileAccess(rauhaFileAccessFILE_DENY_CHANGE)
)

// FileDeny denies access to one inode. Dev is the st_dev stat(2) reports
// for the file as the zone sees it; the kernel keys by the superblock's
// s_dev, which is the same number on ext4, xfs, tmpfs and overlayfs with a
// single lower filesystem, not on btrfs subvolumes.
type FileDeny struct {
	Dev  uint64
	Ino  uint64
	Mask FileAccess
}

// FileDenyName denies access to whatever inode is at one name: Name in the
// directory Dev, Ino (stat(2)'s st_dev and inode, as in FileDeny). It is a
// listed path that did not exist when the list was resolved, and denies a
// file created or moved there later, and what is below it when it is a
// directory.
type FileDenyName struct {
	Dev  uint64
	Ino  uint64
	Name string
	Mask FileAccess
}

// FileNameMax is the longest Name a FileDenyName may have, in bytes: the
// kernel looks names up in a fixed-size key, and never looks up longer
// ones.
const FileNameMax = len(rauhaFileNameKey{}.Name) - 1

// FileDenyChain denies access to whatever comes to be at the path Names
// spell below the directory Dev, Ino (stat(2)'s st_dev and inode, as in
// FileDeny), and below it: a listed path that was missing, with its
// directory, when the list was resolved. The directory is the deepest one
// of the path that existed then. Names has 2 to FileChainMax components (a
// single one is a FileDenyName), none longer than FileNameMax bytes.
type FileDenyChain struct {
	Dev   uint64
	Ino   uint64
	Names []string
	Mask  FileAccess
}

// Last is the link of c that the kernel reports a denial by (as a name:
// Dev 0, Ino the node id of the links below the rest of the path, and the
// final component), so that events can be named by the listed path.
func (c FileDenyChain) Last() FileDenyName {
	n := len(c.Names) - 1
	return FileDenyName{Ino: chainNode(c.Dev, c.Ino, c.Names[:n]), Name: c.Names[n], Mask: c.Mask}
}

// FileChainMax is the most components a FileDenyChain may have.
const FileChainMax = int(rauhaLimitsFILE_CHAIN_MAX)

// ZonePolicy is what the kernel enforces for one zone.
type ZonePolicy struct {
	Mode Mode
	// EgressRestricted limits connect() and datagram sends to Egress.
	// Loopback in the zone's own network namespace is never egress.
	EgressRestricted bool
	Egress           []EgressRule
	// EgressDeny: connect(), datagram sends and packets to these
	// destinations are denied, whatever Egress and NetPeers allow and
	// whether or not EgressRestricted is set; loopback too.
	EgressDeny []EgressRule
	// CapDeny: bit n set denies capable(n) (bpf-lsm backend only).
	CapDeny uint64
	// DenyCrossZoneSignal/Ptrace forbid signalling/ptracing tasks of other
	// zones (bpf-lsm backend only). Tasks outside every zone are never
	// reachable from a zone, whatever this says.
	DenyCrossZoneSignal bool
	DenyCrossZonePtrace bool
	// SignalFrom/PtraceFrom: zones whose tasks may signal/ptrace this
	// zone's tasks although a deny flag is set.
	SignalFrom []uint32
	PtraceFrom []uint32
	// ZonesRestricted (network.allowed_zones): packets between this zone's
	// members and other zones' members, both ways, only with the zones in
	// NetPeers; a zone's own members always reach each other. Addresses of
	// no zone's member stay judged by EgressRestricted and Egress.
	ZonesRestricted bool
	NetPeers        []uint32
	FileDenies      []FileDeny
	// FileTrees: some FileDenies are directories, whose bits hold for
	// everything below them. Every file check of the zone then walks up
	// the directories above the inode it judges, which also covers files
	// created below a denied directory after FileDenies was resolved.
	FileTrees bool
	// FileNames: listed paths by name. Every file check of the zone then
	// looks up the name of the inode it judges and of each directory above
	// it.
	FileNames []FileDenyName
	// FileMounts: the zone's file rules are mounts of its containers (the
	// fallback). The observer then also reports the EXDEV, EBUSY and
	// ENOENT those mounts give (Event.Op).
	FileMounts bool
	// FileChains: listed paths by a chain of names. Every file check of
	// the zone then follows the chains that start at the name of each
	// directory above the inode it judges.
	FileChains []FileDenyChain
	// LearnSyscalls: in ModeLearn, the syscall numbers (of the kernel's
	// architecture, below LearnSyscallMax) whose calls are recorded.
	LearnSyscalls []uint32
}

// LearnSyscallMax bounds the syscall numbers a learning zone records.
const LearnSyscallMax = uint32(rauhaLearnKindLEARN_SYSCALL_WORDS) * 64

// Normalize returns p in the form PolicyOf returns: prefixes masked and
// IPv4-mapped IPv6 prefixes turned into IPv4 ones (the kernel checks mapped
// destinations against the IPv4 list), lists sorted and deduplicated, file
// denies for the same inode merged, empty lists nil.
func (p ZonePolicy) Normalize() ZonePolicy {
	out := p
	out.Egress = normalizeEgress(p.Egress)
	out.EgressDeny = normalizeEgress(p.EgressDeny)
	out.SignalFrom = sortedZones(p.SignalFrom)
	out.PtraceFrom = sortedZones(p.PtraceFrom)
	out.NetPeers = sortedZones(p.NetPeers)
	out.LearnSyscalls = sortedZones(p.LearnSyscalls)

	merged := map[[2]uint64]FileAccess{}
	for _, f := range p.FileDenies {
		merged[[2]uint64{f.Dev, f.Ino}] |= f.Mask
	}
	out.FileDenies = nil
	for k, m := range merged {
		out.FileDenies = append(out.FileDenies, FileDeny{Dev: k[0], Ino: k[1], Mask: m})
	}
	slices.SortFunc(out.FileDenies, func(a, b FileDeny) int {
		return cmp.Or(cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Ino, b.Ino))
	})

	type nameKey struct {
		dev, ino uint64
		name     string
	}
	names := map[nameKey]FileAccess{}
	for _, f := range p.FileNames {
		names[nameKey{f.Dev, f.Ino, f.Name}] |= f.Mask
	}
	out.FileNames = nil
	for k, m := range names {
		out.FileNames = append(out.FileNames, FileDenyName{Dev: k.dev, Ino: k.ino, Name: k.name, Mask: m})
	}
	slices.SortFunc(out.FileNames, func(a, b FileDenyName) int {
		return cmp.Or(cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Name, b.Name))
	})

	chains := map[nameKey]FileAccess{}
	for _, f := range p.FileChains {
		chains[nameKey{f.Dev, f.Ino, strings.Join(f.Names, "/")}] |= f.Mask
	}
	out.FileChains = nil
	for k, m := range chains {
		out.FileChains = append(out.FileChains, FileDenyChain{Dev: k.dev, Ino: k.ino, Names: strings.Split(k.name, "/"), Mask: m})
	}
	slices.SortFunc(out.FileChains, func(a, b FileDenyChain) int {
		return cmp.Or(cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Ino, b.Ino), slices.Compare(a.Names, b.Names))
	})
	return out
}

// Equal reports whether two policies enforce the same thing.
func (p ZonePolicy) Equal(q ZonePolicy) bool {
	return reflect.DeepEqual(p.Normalize(), q.Normalize())
}

// Diff names what p holds that q does not and the reverse, field by field
// (a list by its entries), for a verify report: a whole policy with
// thousands of file denies says nothing a reader can use. It is "" when
// the two are Equal.
func (p ZonePolicy) Diff(q ZonePolicy) string {
	a, b := reflect.ValueOf(p.Normalize()), reflect.ValueOf(q.Normalize())
	var parts []string
	for i := range a.NumField() {
		name := a.Type().Field(i).Name
		fa, fb := a.Field(i), b.Field(i)
		if reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			continue
		}
		if fa.Kind() != reflect.Slice {
			parts = append(parts, fmt.Sprintf("%s %v, not %v", name, fa.Interface(), fb.Interface()))
			continue
		}
		only := func(x, y reflect.Value) []string {
			var out []string
			for j := range x.Len() {
				found := false
				for k := range y.Len() {
					if reflect.DeepEqual(x.Index(j).Interface(), y.Index(k).Interface()) {
						found = true
						break
					}
				}
				if !found {
					out = append(out, fmt.Sprintf("%+v", x.Index(j).Interface()))
				}
			}
			return out
		}
		if extra := only(fa, fb); len(extra) > 0 {
			parts = append(parts, fmt.Sprintf("%s also %s", name, strings.Join(extra, " ")))
		}
		if missing := only(fb, fa); len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("%s lacks %s", name, strings.Join(missing, " ")))
		}
	}
	return strings.Join(parts, "; ")
}

func normalizeEgress(rules []EgressRule) []EgressRule {
	var out []EgressRule
	for _, r := range rules {
		if pf, err := canonicalPrefix(r.Prefix); err == nil {
			r.Prefix = pf
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b EgressRule) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(out)
}

func sortedZones(z []uint32) []uint32 {
	if len(z) == 0 {
		return nil
	}
	out := slices.Clone(z)
	slices.Sort(out)
	return slices.Compact(out)
}

func canonicalPrefix(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() {
		return p, fmt.Errorf("invalid prefix %v", p)
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return p, fmt.Errorf("prefix %v covers IPv4-mapped and other IPv6 addresses; split it", p)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

func (p ZonePolicy) validate(zone uint32) error {
	for _, r := range slices.Concat(p.Egress, p.EgressDeny) {
		if _, err := canonicalPrefix(r.Prefix); err != nil {
			return fmt.Errorf("zone %d egress rule: %w", zone, err)
		}
	}
	for _, z := range slices.Concat(p.SignalFrom, p.PtraceFrom, p.NetPeers) {
		if err := checkZone(z); err != nil {
			return fmt.Errorf("zone %d peer: %w", zone, err)
		}
	}
	for _, nr := range p.LearnSyscalls {
		if nr >= LearnSyscallMax {
			return fmt.Errorf("zone %d: syscall number %d to learn is not below %d", zone, nr, LearnSyscallMax)
		}
	}
	for _, f := range p.FileDenies {
		if f.Mask == 0 || f.Mask&^(FileOpen|FileExec|FileChange) != 0 {
			return fmt.Errorf("zone %d file deny %d:%d: mask %#x is not a combination of FileOpen, FileExec and FileChange", zone, f.Dev, f.Ino, f.Mask)
		}
		if unix.Major(f.Dev) >= 1<<12 || unix.Minor(f.Dev) >= 1<<20 {
			return fmt.Errorf("zone %d file deny: device %d:%d does not fit the kernel's dev_t", zone, unix.Major(f.Dev), unix.Minor(f.Dev))
		}
	}
	for _, f := range p.FileNames {
		if err := checkDenyName(f.Dev, f.Name, f.Mask); err != nil {
			return fmt.Errorf("zone %d file deny name: %w", zone, err)
		}
	}
	for _, f := range p.FileChains {
		if len(f.Names) < 2 || len(f.Names) > FileChainMax {
			return fmt.Errorf("zone %d file deny chain %q: %d names, not 2 to %d", zone, strings.Join(f.Names, "/"), len(f.Names), FileChainMax)
		}
		for _, name := range f.Names {
			if err := checkDenyName(f.Dev, name, f.Mask); err != nil {
				return fmt.Errorf("zone %d file deny chain %q: %w", zone, strings.Join(f.Names, "/"), err)
			}
		}
	}
	return nil
}

// checkDenyName checks a name entry or a component of a chain, in the
// directory of device dev.
func checkDenyName(dev uint64, name string, mask FileAccess) error {
	switch {
	case mask == 0 || mask&^(FileOpen|FileExec|FileChange) != 0:
		return fmt.Errorf("%q: mask %#x is not a combination of FileOpen, FileExec and FileChange", name, mask)
	case name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%q: not a file name", name)
	case len(name) > FileNameMax:
		return fmt.Errorf("%q: longer than %d bytes", name, FileNameMax)
	case dev == 0:
		// Links after a chain's first are keyed by device 0.
		return fmt.Errorf("%q: device 0 is no file system's", name)
	case unix.Major(dev) >= 1<<12 || unix.Minor(dev) >= 1<<20:
		return fmt.Errorf("%q: device %d:%d does not fit the kernel's dev_t", name, unix.Major(dev), unix.Minor(dev))
	}
	return nil
}

// kernelDev converts stat(2)'s st_dev to the kernel's internal dev_t.
func kernelDev(dev uint64) uint32 { return unix.Major(dev)<<20 | unix.Minor(dev) }

func userDev(kdev uint32) uint64 { return unix.Mkdev(kdev>>20, kdev&(1<<20-1)) }

// ErrNoPolicy is returned by PolicyOf for a zone without a policy.
var ErrNoPolicy = errors.New("zone has no policy in the kernel")

// zoneState is one zone's entries in every policy map, keyed as stored.
type zoneState struct {
	policy  *rauhaPolicy // nil: no entry
	egress4 map[rauhaEgress4Key]bool
	egress6 map[rauhaEgress6Key]bool
	deny4   map[rauhaEgress4Key]bool
	deny6   map[rauhaEgress6Key]bool
	peers   map[rauhaPeerKey]uint32 // only entries whose target is the zone
	learn   rauhaLearnSyscallSet
	files   map[rauhaFileKey]uint32
	names   map[rauhaFileNameKey]uint32
	chains  map[rauhaFileNameKey]rauhaFileChainLink
}

func (p ZonePolicy) state(zone uint32) zoneState {
	s := zoneState{
		policy:  &rauhaPolicy{CapDeny: p.CapDeny},
		egress4: map[rauhaEgress4Key]bool{}, egress6: map[rauhaEgress6Key]bool{},
		deny4: map[rauhaEgress4Key]bool{}, deny6: map[rauhaEgress6Key]bool{},
		peers: map[rauhaPeerKey]uint32{}, files: map[rauhaFileKey]uint32{}, names: map[rauhaFileNameKey]uint32{},
		chains: map[rauhaFileNameKey]rauhaFileChainLink{},
	}
	switch p.Mode {
	case ModeAudit:
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_AUDIT)
	case ModeLearn:
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_LEARN)
	}
	for _, nr := range p.LearnSyscalls {
		s.learn.Bits[nr/64] |= 1 << (nr % 64)
	}
	if p.DenyCrossZoneSignal {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_DENY_SIGNAL)
	}
	if p.DenyCrossZonePtrace {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_DENY_PTRACE)
	}
	if p.EgressRestricted {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_EGRESS_RESTRICTED)
	}
	if p.ZonesRestricted {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_ZONES_RESTRICTED)
	}
	if p.FileTrees {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_FILE_TREES)
	}
	if p.FileMounts {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_FILE_MOUNTS)
	}
	egressKeys(zone, p.Egress, s.egress4, s.egress6)
	egressKeys(zone, p.EgressDeny, s.deny4, s.deny6)
	if len(p.EgressDeny) > 0 {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_EGRESS_DENIES)
	}
	for _, a := range p.SignalFrom {
		s.peers[rauhaPeerKey{Actor: a, Target: zone}] |= uint32(rauhaPeerBitPEER_SIGNAL)
	}
	for _, a := range p.PtraceFrom {
		s.peers[rauhaPeerKey{Actor: a, Target: zone}] |= uint32(rauhaPeerBitPEER_PTRACE)
	}
	for _, a := range p.NetPeers {
		s.peers[rauhaPeerKey{Actor: a, Target: zone}] |= uint32(rauhaPeerBitPEER_NET)
	}
	for _, f := range p.FileDenies {
		s.files[rauhaFileKey{Zone: zone, Dev: kernelDev(f.Dev), Ino: f.Ino}] |= uint32(f.Mask)
	}
	for _, f := range p.FileNames {
		s.names[nameKeyOf(zone, kernelDev(f.Dev), f.Ino, f.Name)] |= uint32(f.Mask)
	}
	if len(s.names) > 0 {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_FILE_NAMES)
	}
	for _, f := range p.FileChains {
		dev, ino := kernelDev(f.Dev), f.Ino
		for i, name := range f.Names {
			k := nameKeyOf(zone, dev, ino, name)
			link := s.chains[k]
			if i == len(f.Names)-1 {
				link.Mask |= uint32(f.Mask)
			} else {
				link.Next = chainNode(f.Dev, f.Ino, f.Names[:i+1])
			}
			s.chains[k] = link
			dev, ino = 0, link.Next
		}
	}
	if len(s.chains) > 0 {
		s.policy.Flags |= uint32(rauhaPolicyFlagPOLICY_FILE_CHAINS)
	}
	return s
}

func nameKeyOf(zone, dev uint32, ino uint64, name string) rauhaFileNameKey {
	k := rauhaFileNameKey{Zone: zone, Dev: dev, Ino: ino}
	for i := range len(name) {
		k.Name[i] = int8(name[i])
	}
	return k
}

// chainNode is the node id of the links below the path names spell below
// the directory dev, ino: derived from them, so that chains sharing a
// prefix share its links and every push of a chain writes the same keys.
// Never 0 (no link below).
func chainNode(dev, ino uint64, names []string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d:%d", dev, ino)
	for _, n := range names {
		h.Write([]byte{0})
		h.Write([]byte(n))
	}
	return max(h.Sum64(), 1)
}

// fileChains reads chains back from their links: every path from a first
// link (a real device) through next to a link with bits. Links no first
// link leads to deny nothing and are not reported.
func fileChains(links map[rauhaFileNameKey]rauhaFileChainLink) []FileDenyChain {
	below := map[uint64][]rauhaFileNameKey{}
	for k := range links {
		if k.Dev == 0 {
			below[k.Ino] = append(below[k.Ino], k)
		}
	}
	var out []FileDenyChain
	var follow func(first rauhaFileNameKey, k rauhaFileNameKey, names []string)
	follow = func(first, k rauhaFileNameKey, names []string) {
		names = append(slices.Clip(names), keyName(k.Name))
		link := links[k]
		if link.Mask != 0 {
			out = append(out, FileDenyChain{Dev: userDev(first.Dev), Ino: first.Ino, Names: names, Mask: FileAccess(link.Mask)})
		}
		if link.Next == 0 || len(names) >= FileChainMax {
			return
		}
		for _, next := range below[link.Next] {
			follow(first, next, names)
		}
	}
	for k := range links {
		if k.Dev != 0 {
			follow(k, k, nil)
		}
	}
	return out
}

// egressKeys adds the trie keys of zone's rules to k4 and k6.
func egressKeys(zone uint32, rules []EgressRule, k4 map[rauhaEgress4Key]bool, k6 map[rauhaEgress6Key]bool) {
	for _, r := range rules {
		pf, _ := canonicalPrefix(r.Prefix)
		if pf.Addr().Is4() {
			k4[rauhaEgress4Key{Prefixlen: 64 + uint32(pf.Bits()), Zone: zone, Port: uint32(r.Port), Addr: pf.Addr().As4()}] = true
		} else {
			k6[rauhaEgress6Key{Prefixlen: 64 + uint32(pf.Bits()), Zone: zone, Port: uint32(r.Port), Addr: pf.Addr().As16()}] = true
		}
	}
}

// egressRules is egressKeys read back.
func egressRules(k4 map[rauhaEgress4Key]bool, k6 map[rauhaEgress6Key]bool) []EgressRule {
	var out []EgressRule
	for k := range k4 {
		out = append(out, EgressRule{Prefix: netip.PrefixFrom(netip.AddrFrom4(k.Addr), int(k.Prefixlen)-64), Port: uint16(k.Port)})
	}
	for k := range k6 {
		out = append(out, EgressRule{Prefix: netip.PrefixFrom(netip.AddrFrom16(k.Addr), int(k.Prefixlen)-64), Port: uint16(k.Port)})
	}
	return out
}

func (s zoneState) zonePolicy() ZonePolicy {
	var p ZonePolicy
	flags := s.policy.Flags
	if flags&uint32(rauhaPolicyFlagPOLICY_AUDIT) != 0 {
		p.Mode = ModeAudit
	}
	if flags&uint32(rauhaPolicyFlagPOLICY_LEARN) != 0 {
		p.Mode = ModeLearn
	}
	for w, bits := range s.learn.Bits {
		for b := range uint32(64) {
			if bits&(1<<b) != 0 {
				p.LearnSyscalls = append(p.LearnSyscalls, uint32(w)*64+b)
			}
		}
	}
	p.DenyCrossZoneSignal = flags&uint32(rauhaPolicyFlagPOLICY_DENY_SIGNAL) != 0
	p.DenyCrossZonePtrace = flags&uint32(rauhaPolicyFlagPOLICY_DENY_PTRACE) != 0
	p.EgressRestricted = flags&uint32(rauhaPolicyFlagPOLICY_EGRESS_RESTRICTED) != 0
	p.ZonesRestricted = flags&uint32(rauhaPolicyFlagPOLICY_ZONES_RESTRICTED) != 0
	p.FileTrees = flags&uint32(rauhaPolicyFlagPOLICY_FILE_TREES) != 0
	p.FileMounts = flags&uint32(rauhaPolicyFlagPOLICY_FILE_MOUNTS) != 0
	p.CapDeny = s.policy.CapDeny
	p.Egress = egressRules(s.egress4, s.egress6)
	// As for names: without the flag the programs never look the deny
	// tries up, and entries left there deny nothing.
	if flags&uint32(rauhaPolicyFlagPOLICY_EGRESS_DENIES) != 0 {
		p.EgressDeny = egressRules(s.deny4, s.deny6)
	}
	for k, bits := range s.peers {
		if bits&uint32(rauhaPeerBitPEER_SIGNAL) != 0 {
			p.SignalFrom = append(p.SignalFrom, k.Actor)
		}
		if bits&uint32(rauhaPeerBitPEER_PTRACE) != 0 {
			p.PtraceFrom = append(p.PtraceFrom, k.Actor)
		}
		if bits&uint32(rauhaPeerBitPEER_NET) != 0 {
			p.NetPeers = append(p.NetPeers, k.Actor)
		}
	}
	for k, m := range s.files {
		p.FileDenies = append(p.FileDenies, FileDeny{Dev: userDev(k.Dev), Ino: k.Ino, Mask: FileAccess(m)})
	}
	// The programs look names up only with the flag: without it, entries
	// left in the map enforce nothing.
	if flags&uint32(rauhaPolicyFlagPOLICY_FILE_NAMES) != 0 {
		for k, m := range s.names {
			p.FileNames = append(p.FileNames, FileDenyName{Dev: userDev(k.Dev), Ino: k.Ino, Name: keyName(k.Name), Mask: FileAccess(m)})
		}
	}
	if flags&uint32(rauhaPolicyFlagPOLICY_FILE_CHAINS) != 0 {
		p.FileChains = fileChains(s.chains)
	}
	return p.Normalize()
}

func keyName(b [len(rauhaFileNameKey{}.Name)]int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// readState reads one zone's entries. With actorToo, peers in which the zone
// is the actor (entries of other zones' policies) are returned as well.
func (k *Kernel) readState(zone uint32, actorToo bool) (zoneState, error) {
	s := zoneState{egress4: map[rauhaEgress4Key]bool{}, egress6: map[rauhaEgress6Key]bool{},
		deny4: map[rauhaEgress4Key]bool{}, deny6: map[rauhaEgress6Key]bool{},
		peers: map[rauhaPeerKey]uint32{}, files: map[rauhaFileKey]uint32{}, names: map[rauhaFileNameKey]uint32{},
		chains: map[rauhaFileNameKey]rauhaFileChainLink{}}
	var pol rauhaPolicy
	switch err := k.maps.ZonePolicy.Lookup(zone, &pol); {
	case err == nil:
		s.policy = &pol
	case !errors.Is(err, ebpf.ErrKeyNotExist):
		return s, fmt.Errorf("read policy of zone %d: %w", zone, err)
	}

	// The deny tries through their key hashes (putDenies): every standard
	// zone has entries there, and reading a trie costs a call per entry of
	// every zone.
	errs := []error{
		readTrie(k.maps.Egress4, zone, s.egress4), readTrie(k.maps.Egress6, zone, s.egress6),
		eachHashEntry(k.maps.EgressDeny4Keys, func(key *rauhaEgress4Key, _ *uint32) {
			if key.Zone == zone {
				s.deny4[*key] = true
			}
		}),
		eachHashEntry(k.maps.EgressDeny6Keys, func(key *rauhaEgress6Key, _ *uint32) {
			if key.Zone == zone {
				s.deny6[*key] = true
			}
		}),
	}
	errs = append(errs, eachHashEntry(k.maps.ZonePeers, func(kp *rauhaPeerKey, bits *uint32) {
		if kp.Target == zone || (actorToo && kp.Actor == zone) {
			s.peers[*kp] = *bits
		}
	}))
	errs = append(errs, eachHashEntry(k.maps.FileDeny, func(kf *rauhaFileKey, mask *uint32) {
		if kf.Zone == zone {
			s.files[*kf] = *mask
		}
	}))
	errs = append(errs, eachHashEntry(k.maps.FileDenyNames, func(kn *rauhaFileNameKey, mask *uint32) {
		if kn.Zone == zone {
			s.names[*kn] = *mask
		}
	}))
	errs = append(errs, eachHashEntry(k.maps.FileDenyChains, func(kn *rauhaFileNameKey, link *rauhaFileChainLink) {
		if kn.Zone == zone {
			s.chains[*kn] = *link
		}
	}))
	errs = append(errs, k.maps.LearnSyscalls.Lookup(zone, &s.learn))
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("read policy maps of zone %d: %w", zone, err)
	}
	return s, nil
}

// readTrie adds the keys of zone in one of the egress tries to out. The
// tries are LPM tries, which have no batch lookup.
func readTrie[K rauhaEgress4Key | rauhaEgress6Key](m *ebpf.Map, zone uint32, out map[K]bool) error {
	var key K
	var v uint32
	it := m.Iterate()
	for it.Next(&key, &v) {
		if keyZone(key) == zone {
			out[key] = true
		}
	}
	return it.Err()
}

func keyZone[K rauhaEgress4Key | rauhaEgress6Key](key K) uint32 {
	switch k := any(key).(type) {
	case rauhaEgress4Key:
		return k.Zone
	case rauhaEgress6Key:
		return k.Zone
	}
	return 0
}

// PolicyOf reads a zone's policy back from the kernel maps, normalized
// (see Normalize), for verify to compare with the stored one.
func (k *Kernel) PolicyOf(zone uint32) (ZonePolicy, error) {
	if err := checkZone(zone); err != nil {
		return ZonePolicy{}, err
	}
	s, err := k.readState(zone, false)
	if err != nil {
		return ZonePolicy{}, err
	}
	if s.policy == nil {
		return ZonePolicy{}, fmt.Errorf("zone %d: %w", zone, ErrNoPolicy)
	}
	return s.zonePolicy(), nil
}

// PolicyZones lists, in order, the zone ids that have a policy in the
// kernel: one batch read of the policy map, where asking PolicyOf for every
// possible id took about 5000 bpf calls (`zone reconcile`, 58 ms here).
func (k *Kernel) PolicyZones() ([]uint32, error) {
	var ids []uint32
	if err := eachHashEntry(k.maps.ZonePolicy, func(id *uint32, _ *rauhaPolicy) { ids = append(ids, *id) }); err != nil {
		return nil, fmt.Errorf("list zone policies: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// restrictive returns the policy value that is at least as restrictive as
// both: enforce unless both audit, every deny flag and denied capability of
// either. A missing entry means what the programs assume for it.
func restrictive(a, b *rauhaPolicy) rauhaPolicy {
	missing := rauhaPolicy{Flags: uint32(rauhaPolicyFlagPOLICY_MISSING_FLAGS)}
	if a == nil {
		a = &missing
	}
	if b == nil {
		b = &missing
	}
	// Audit and learn deny nothing: kept only when both have them.
	allow := uint32(rauhaPolicyFlagPOLICY_AUDIT | rauhaPolicyFlagPOLICY_LEARN)
	return rauhaPolicy{
		Flags:   (a.Flags|b.Flags)&^allow | a.Flags&b.Flags&allow,
		CapDeny: a.CapDeny | b.CapDeny,
	}
}

// SetPolicy makes the kernel enforce p for zone, replacing whatever the maps
// hold for it (including entries a crash left behind).
//
// Update order. A zone's tasks may be running while this executes, and it
// may fail half-way; at every step the kernel state must be at least as
// restrictive as both the old and the new policy, so that a stale entry is
// only ever more restrictive than the stored policy. So it first moves to
// the most restrictive combination of the two, then relaxes to p:
//
//  1. zone_policy := restrictive(old, new) (enforce, union of deny flags and
//     denied capabilities);
//  2. file_deny, file_deny_names and file_deny_chains := old | new bits
//     (a chain link keeps the old one's next where the new has none),
//     egress_deny{4,6} :=
//     old + new entries (adds denials);
//  3. zone_peers := old & new bits (withdraws permissions);
//  4. egress: delete allow entries not in p.
//     Now the kernel enforces the intersection of both policies.
//  5. egress: insert p's allow entries;
//  6. zone_peers := new;  7. file_deny, file_deny_names, file_deny_chains
//     and egress_deny{4,6} := new;
//  8. zone_policy := new.
//
// Steps 5–8 only remove restrictions p does not have, so a failure there
// leaves the kernel stricter than p, never looser.
func (k *Kernel) SetPolicy(zone uint32, p ZonePolicy) (err error) {
	if err := p.validate(zone); err != nil {
		return err
	}
	want := p.Normalize().state(zone)

	unlock, err := k.lockZone(zone)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()
	old, err := k.readState(zone, false)
	if err != nil {
		return err
	}

	m := &k.maps
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("set policy of zone %d: %s: %w (the kernel is left stricter than the new policy; retry)", zone, what, err)
		}
		return nil
	}

	merged := restrictive(old.policy, want.policy)
	if err := step("restrict zone_policy", m.ZonePolicy.Update(zone, &merged, ebpf.UpdateAny)); err != nil {
		return err
	}
	if p.ZonesRestricted {
		// Before this zone judges other zones' senders, they must not send
		// it packets from addresses it cannot attribute (egress_skb).
		if err := step("mark allowed_zones in use", k.setZonesInUse(true)); err != nil {
			return err
		}
	}
	for key, bits := range want.files {
		if err := step("add file denies", m.FileDeny.Update(key, bits|old.files[key], ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	for key, bits := range want.names {
		if err := step("add file deny names", m.FileDenyNames.Update(key, bits|old.names[key], ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	for key, link := range want.chains {
		if err := step("add file deny chains", m.FileDenyChains.Update(key, unionLink(link, old.chains[key]), ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	if err := step("add egress denies", putDenies(m.EgressDeny4Keys, m.EgressDeny4, want.deny4)); err != nil {
		return err
	}
	if err := step("add egress denies", putDenies(m.EgressDeny6Keys, m.EgressDeny6, want.deny6)); err != nil {
		return err
	}
	for key, bits := range old.peers {
		if err := step("withdraw peers", setOrDelete(m.ZonePeers, key, bits&want.peers[key])); err != nil {
			return err
		}
	}
	for key := range old.egress4 {
		if !want.egress4[key] {
			if err := step("withdraw egress", deleteIfPresent(m.Egress4, key)); err != nil {
				return err
			}
		}
	}
	for key := range old.egress6 {
		if !want.egress6[key] {
			if err := step("withdraw egress", deleteIfPresent(m.Egress6, key)); err != nil {
				return err
			}
		}
	}
	// Sockets must not keep verdicts of the old policy while the new one
	// relaxes the intersection: a policy killed from here on leaves them
	// judged by what the maps hold.
	if err := step("invalidate the sockets' verdicts", k.netChanged()); err != nil {
		return err
	}

	for key := range want.egress4 {
		if err := step("allow egress", m.Egress4.Update(key, uint32(1), ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	for key := range want.egress6 {
		if err := step("allow egress", m.Egress6.Update(key, uint32(1), ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	for key, bits := range want.peers {
		if err := step("grant peers", m.ZonePeers.Update(key, bits, ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	for key := range old.files {
		if err := step("drop file denies", setOrDelete(m.FileDeny, key, want.files[key])); err != nil {
			return err
		}
	}
	for key, bits := range want.files {
		if err := step("set file denies", m.FileDeny.Update(key, bits, ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	if err := step("drop egress denies", dropDenies(m.EgressDeny4, m.EgressDeny4Keys, old.deny4, want.deny4)); err != nil {
		return err
	}
	if err := step("drop egress denies", dropDenies(m.EgressDeny6, m.EgressDeny6Keys, old.deny6, want.deny6)); err != nil {
		return err
	}
	for key := range old.names {
		if err := step("drop file deny names", setOrDelete(m.FileDenyNames, key, want.names[key])); err != nil {
			return err
		}
	}
	for key, bits := range want.names {
		if err := step("set file deny names", m.FileDenyNames.Update(key, bits, ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	for key := range old.chains {
		if _, keep := want.chains[key]; !keep {
			if err := step("drop file deny chains", deleteIfPresent(m.FileDenyChains, key)); err != nil {
				return err
			}
		}
	}
	for key, link := range want.chains {
		if err := step("set file deny chains", m.FileDenyChains.Update(key, link, ebpf.UpdateAny)); err != nil {
			return err
		}
	}
	// What a learning zone records, not what it may do: no order to keep.
	if err := step("set learned syscalls", m.LearnSyscalls.Update(zone, &want.learn, ebpf.UpdateAny)); err != nil {
		return err
	}
	if err := step("set zone_policy", m.ZonePolicy.Update(zone, want.policy, ebpf.UpdateAny)); err != nil {
		return err
	}
	return step("update allowed_zones in use", k.refreshZonesInUse())
}

// putDenies inserts keys into a deny trie, each into its key hash first:
// the hash holds every key the trie holds, so that an entry a crash leaves
// is found (readState) and dropped by the next SetPolicy.
func putDenies[K comparable](keyHash, trie *ebpf.Map, keys map[K]bool) error {
	for key := range keys {
		if err := keyHash.Update(key, uint32(1), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("egress_deny keys full? %w", err)
		}
		if err := trie.Update(key, uint32(1), ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return nil
}

// dropDenies deletes the keys of old that keep does not hold from a deny
// trie, then from its key hash.
func dropDenies[K comparable](trie, keyHash *ebpf.Map, old, keep map[K]bool) error {
	for key := range old {
		if keep[key] {
			continue
		}
		if err := deleteIfPresent(trie, key); err != nil {
			return err
		}
		if err := deleteIfPresent(keyHash, key); err != nil {
			return err
		}
	}
	return nil
}

// setZonesInUse sets the switch that makes every member's packet program
// check that a packet to another zone's member comes from an address
// registered to the sender's zone (egress_skb).
func (k *Kernel) setZonesInUse(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	return k.maps.ZonesInUse.Update(uint32(0), v, ebpf.UpdateAny)
}

// refreshZonesInUse sets the switch to whether any zone's policy has
// network.allowed_zones, and the one to whether any zone learns. The
// caller holds the pin-directory lock.
func (k *Kernel) refreshZonesInUse() error {
	on, learn := false, uint32(0)
	err := eachHashEntry(k.maps.ZonePolicy, func(_ *uint32, p *rauhaPolicy) {
		on = on || p.Flags&uint32(rauhaPolicyFlagPOLICY_ZONES_RESTRICTED) != 0
		if p.Flags&uint32(rauhaPolicyFlagPOLICY_LEARN) != 0 {
			learn = 1
		}
	})
	if err != nil {
		return fmt.Errorf("read zone policies: %w", err)
	}
	if err := k.maps.LearnActive.Update(uint32(0), learn, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("set whether a zone learns: %w", err)
	}
	if err := k.setLearning(learn != 0); err != nil {
		return err
	}
	return k.setZonesInUse(on)
}

// DeletePolicy removes a zone's policy, its peer entries in both directions
// (so a later zone reusing the id inherits no permission) and its counters.
// The zone must have no members left: RemoveMember them first.
func (k *Kernel) DeletePolicy(zone uint32) (err error) {
	unlock, err := k.lockZone(zone)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()

	members, err := k.Members()
	if err != nil {
		return err
	}
	for cgid, z := range members {
		if z == zone {
			return fmt.Errorf("delete policy of zone %d: cgroup %d is still a member; RemoveMember first", zone, cgid)
		}
	}
	old, err := k.readState(zone, true)
	if err != nil {
		return err
	}
	m := &k.maps
	// Permissions go before restrictions, as in SetPolicy.
	var errs []error
	for key := range old.egress4 {
		errs = append(errs, deleteIfPresent(m.Egress4, key))
	}
	for key := range old.egress6 {
		errs = append(errs, deleteIfPresent(m.Egress6, key))
	}
	for key := range old.peers {
		errs = append(errs, deleteIfPresent(m.ZonePeers, key))
	}
	errs = append(errs, dropDenies(m.EgressDeny4, m.EgressDeny4Keys, old.deny4, nil),
		dropDenies(m.EgressDeny6, m.EgressDeny6Keys, old.deny6, nil))
	for key := range old.files {
		errs = append(errs, deleteIfPresent(m.FileDeny, key))
	}
	for key := range old.names {
		errs = append(errs, deleteIfPresent(m.FileDenyNames, key))
	}
	for key := range old.chains {
		errs = append(errs, deleteIfPresent(m.FileDenyChains, key))
	}
	errs = append(errs, deleteIfPresent(m.ZonePolicy, zone))
	errs = append(errs, m.LearnSyscalls.Update(zone, &rauhaLearnSyscallSet{}, ebpf.UpdateAny))
	errs = append(errs, k.refreshZonesInUse())
	errs = append(errs, k.resetCounters(zone))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete policy of zone %d: %w", zone, err)
	}
	return nil
}

// WithdrawGrants deletes the entries of other zones' policies that let
// zone's tasks signal or ptrace theirs. A zone that has just been created
// has none: when the others' policies were pushed, no zone had its id. But
// ids come back once a root has gone round all of them, and a deleted
// zone whose removal was cut short before DeletePolicy (a killed delete
// that reconcile has not repaired) leaves such entries behind. SetPolicy
// replaces a zone's own entries, not these, so without this the new zone
// would inherit what the others had granted the old one.
func (k *Kernel) WithdrawGrants(zone uint32) (err error) {
	unlock, err := k.lockZone(zone)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()
	var stale []rauhaPeerKey
	err = eachHashEntry(k.maps.ZonePeers, func(kp *rauhaPeerKey, _ *uint32) {
		if kp.Actor == zone {
			stale = append(stale, *kp)
		}
	})
	for _, key := range stale {
		err = errors.Join(err, deleteIfPresent(k.maps.ZonePeers, key))
	}
	if err != nil {
		return fmt.Errorf("withdraw what other zones grant zone %d: %w", zone, err)
	}
	return nil
}

// lockZone checks a zone id and takes the pin directory's lock, under which
// every change of the policy maps runs.
func (k *Kernel) lockZone(zone uint32) (func(), error) {
	if err := checkZone(zone); err != nil {
		return nil, err
	}
	return lockPinDir(k.pinDir)
}

// unionLink denies what either link denies, and leads where the new one
// does (where the old one does when the new one leads nowhere).
func unionLink(new, old rauhaFileChainLink) rauhaFileChainLink {
	out := rauhaFileChainLink{Mask: new.Mask | old.Mask, Next: new.Next}
	if out.Next == 0 {
		out.Next = old.Next
	}
	return out
}

func setOrDelete(m *ebpf.Map, key any, bits uint32) error {
	if bits == 0 {
		return deleteIfPresent(m, key)
	}
	return m.Update(key, bits, ebpf.UpdateAny)
}

func deleteIfPresent(m *ebpf.Map, key any) error {
	if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}
