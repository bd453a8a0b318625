package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// LearnKind is what a learning zone recorded (learn.bpf.h).
type LearnKind uint16

const (
	LearnExec       = LearnKind(rauhaLearnKindLEARN_EXEC)
	LearnRead       = LearnKind(rauhaLearnKindLEARN_READ)
	LearnWrite      = LearnKind(rauhaLearnKindLEARN_WRITE)
	LearnEgress     = LearnKind(rauhaLearnKindLEARN_EGRESS)
	LearnPeerZone   = LearnKind(rauhaLearnKindLEARN_PEER_ZONE)
	LearnCapability = LearnKind(rauhaLearnKindLEARN_CAPABILITY)
	LearnSignal     = LearnKind(rauhaLearnKindLEARN_SIGNAL)
	LearnPtrace     = LearnKind(rauhaLearnKindLEARN_PTRACE)
	LearnSyscall    = LearnKind(rauhaLearnKindLEARN_SYSCALL)
)

// Learned is one object a learning zone's workload used, with how often
// since the previous drain.
type Learned struct {
	Zone uint32
	Kind LearnKind
	// Path: LearnExec, LearnRead, LearnWrite (as the process passed it).
	Path string
	// LearnEgress: the destination and its IP protocol.
	Addr  netip.AddrPort
	Proto uint8
	// LearnPeerZone, LearnSignal, LearnPtrace: a zone id (0: the host);
	// LearnCapability: the capability; LearnSyscall: the syscall number
	// (of the kernel's architecture).
	Number      uint32
	Count       uint64
	First, Last time.Time
	CgroupID    uint64 // the member whose process did it first
	Comm        string
}

var (
	learnKeySize   = binary.Size(rauhaLearnKey{})
	learnValueSize = binary.Size(rauhaLearnValue{})
)

// decodeLearned decodes one entry of the learned map. The kernel writes
// both, but a map entry is only bytes: sizes and kinds are checked.
func decodeLearned(key, value []byte, clock bootClock) (Learned, error) {
	if len(key) != learnKeySize || len(value) != learnValueSize {
		return Learned{}, fmt.Errorf("learned entry of %d+%d bytes, want %d+%d", len(key), len(value), learnKeySize, learnValueSize)
	}
	var k rauhaLearnKey
	var v rauhaLearnValue
	if err := binary.Read(bytes.NewReader(key), binary.NativeEndian, &k); err != nil {
		return Learned{}, err
	}
	if err := binary.Read(bytes.NewReader(value), binary.NativeEndian, &v); err != nil {
		return Learned{}, err
	}
	l := Learned{
		Zone: k.Zone, Kind: LearnKind(k.Kind), Count: v.Count, CgroupID: v.Cgid, Comm: cString(v.Comm[:]),
		First: clock.wall(v.FirstNs), Last: clock.wall(v.LastNs),
	}
	obj := key[8:]
	switch l.Kind {
	case LearnExec, LearnRead, LearnWrite:
		l.Path = cString(k.Object[:])
		if l.Path == "" {
			return Learned{}, fmt.Errorf("learned %d entry without a path", l.Kind)
		}
	case LearnEgress:
		var a rauhaLearnAddr
		if err := binary.Read(bytes.NewReader(obj), binary.NativeEndian, &a); err != nil {
			return Learned{}, err
		}
		l.Proto = a.Proto
		switch a.Family {
		case unix.AF_INET:
			l.Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a.Addr[:4])), a.Port)
		case unix.AF_INET6:
			l.Addr = netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), a.Port)
		default:
			return Learned{}, fmt.Errorf("learned egress of address family %d", a.Family)
		}
	case LearnPeerZone, LearnCapability, LearnSignal, LearnPtrace, LearnSyscall:
		l.Number = binary.NativeEndian.Uint32(obj)
	default:
		return Learned{}, fmt.Errorf("learned entry of unknown kind %d", k.Kind)
	}
	return l, nil
}

// DrainLearned takes what learning zones recorded out of the kernel: each
// entry is looked up and deleted at once, so a repeat after the drain
// starts a new count rather than being lost. A malformed entry is deleted
// and reported in the error after the rest.
func (k *Kernel) DrainLearned() ([]Learned, error) {
	var keys [][]byte
	key := make([]byte, learnKeySize)
	val := make([]byte, learnValueSize)
	it := k.maps.Learned.Iterate()
	for it.Next(key, val) {
		keys = append(keys, bytes.Clone(key))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read the learned map: %w", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	clock := newBootClock()
	out := make([]Learned, 0, len(keys))
	var errs []error
	for _, kb := range keys {
		if err := k.maps.Learned.LookupAndDelete(kb, val); errors.Is(err, ebpf.ErrKeyNotExist) {
			continue
		} else if err != nil {
			return out, fmt.Errorf("take a learned entry: %w", err)
		}
		l, err := decodeLearned(kb, val, clock)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// SetLearnMember makes a member of a learning zone armed by its first exec
// in the mount namespace mntns (the inode of its /proc/PID/ns/mnt): its
// container's, which the runtime's own processes enter only after their
// exec. mntns 0 forgets it.
func (k *Kernel) SetLearnMember(cgid, mntns uint64) error {
	if mntns == 0 {
		if err := k.maps.LearnMembers.Delete(cgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("forget learning member %d: %w", cgid, err)
		}
		return nil
	}
	if err := k.maps.LearnMembers.Update(cgid, mntns, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("register learning member %d: %w", cgid, err)
	}
	return nil
}

// setLearning attaches the learning programs (on) or detaches them: they
// run for every exec, fork, exit, signal and capability check of the host,
// so they are attached only while some zone learns. A program the kernel
// lacks what it needs for is not pinned and stays out. The caller holds the
// pin-directory lock.
func (k *Kernel) setLearning(on bool) error {
	for _, p := range backendPrograms(k.lsm) {
		if !p.learning {
			continue
		}
		pin := linkPin(k.pinDir, p.name)
		switch attached := exists(pin); {
		case !on && attached:
			if err := detachPinned(pin); err != nil {
				return err
			}
		case on && !attached:
			prog, err := ebpf.LoadPinnedProgram(progPin(k.pinDir, p.name), nil)
			if errors.Is(err, os.ErrNotExist) && p.needs != "" {
				continue
			}
			if err != nil {
				return fmt.Errorf("open pinned program %s: %w", p.name, err)
			}
			_, err = pinProgramLink(k.pinDir, p, prog)
			prog.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// LearnsCapabilities reports whether learning zones under pinDir record
// the capabilities their workloads use: bpf-lsm does in lsm/capable, the
// fallback where the kernel has the cap_capable tracepoint (Linux 6.14).
func LearnsCapabilities(pinDir string, lsm bool) bool {
	return lsm || exists(progPin(pinDir, rauhaProgLearnCapable))
}
