package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// AddMember makes the tasks of a cgroup-v2 directory (and of every cgroup
// below it) members of zone, and returns the cgroup's id. It first attaches
// and pins the backend's egress programs to that cgroup: those programs
// fail closed for a cgroup that is attached but not yet registered, so no
// window lets egress through. Adding a member again to
// the same zone is a no-op; moving it to another zone needs RemoveMember.
func (k *Kernel) AddMember(zone uint32, cgroupDir string) (_ uint64, err error) {
	if err := checkZone(zone); err != nil {
		return 0, err
	}
	cgid, err := CgroupID(cgroupDir)
	if err != nil {
		return 0, err
	}
	unlock, err := lockPinDir(k.pinDir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()

	var cur uint32
	err = k.maps.ZoneByCgid.Lookup(cgid, &cur)
	switch {
	case err == nil && cur != zone:
		return 0, fmt.Errorf("cgroup %s (id %d) is already a member of zone %d; remove it there first", cgroupDir, cgid, cur)
	case err != nil && !errors.Is(err, ebpf.ErrKeyNotExist):
		return 0, fmt.Errorf("look up cgroup %d: %w", cgid, err)
	}

	if err := k.attachMember(cgroupDir, cgid); err != nil {
		return 0, err
	}
	if err := k.maps.ZoneByCgid.Update(cgid, zone, ebpf.UpdateAny); err != nil {
		return 0, fmt.Errorf("register cgroup %d in zone %d (zone_by_cgid full?): %w", cgid, zone, err)
	}
	return cgid, nil
}

func (k *Kernel) attachMember(cgroupDir string, cgid uint64) error {
	dir := memberDir(k.pinDir, cgid)
	pinned, err := k.linkCgroup(cgroupDir, dir)
	if err != nil {
		for _, p := range pinned {
			_ = os.Remove(p)
		}
		_ = os.Remove(dir) // only if empty: links pinned before stay
	}
	return err
}

// linkCgroup attaches every per-member program to cgroupDir and pins the
// links in dir (created when missing), skipping links pinned already. It
// returns the pins it made, also when it fails.
func (k *Kernel) linkCgroup(cgroupDir, dir string) (pinned []string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pin directory %s: %w", dir, err)
	}
	// The bpf(2) commands themselves, not cilium/ebpf's Program and Link:
	// those read each program's info and open the cgroup once per program,
	// which made this a millisecond of every create.
	cg, err := os.Open(cgroupDir)
	if err != nil {
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	defer cg.Close()
	for _, p := range backendPrograms(k.lsm) {
		if !p.perMember {
			continue
		}
		pin := filepath.Join(dir, p.name)
		if exists(pin) {
			continue
		}
		prog, err := objGet(progPin(k.pinDir, p.name))
		if err != nil {
			return pinned, fmt.Errorf("open pinned program %s: %w", p.name, err)
		}
		l, err := cgroupLink(prog, int(cg.Fd()), p.attach)
		unix.Close(prog)
		if err != nil {
			return pinned, fmt.Errorf("attach %s to %s: %w", p.name, cgroupDir, err)
		}
		err = objPin(l, pin)
		unix.Close(l)
		if err != nil {
			return pinned, fmt.Errorf("pin link of %s for %s (the program is detached again): %w", p.name, cgroupDir, err)
		}
		pinned = append(pinned, pin)
	}
	return pinned, nil
}

// RemoveMember ends a cgroup's membership: first the registration, so the
// fallback's egress programs fail closed until they are detached, then the
// links. cgid 0 means: take it from cgroupDir (which must then still exist);
// a deleted container's cgroup is usually gone, so pass the id stored at
// AddMember. Removing a non-member is not an error.
func (k *Kernel) RemoveMember(cgroupDir string, cgid uint64) (err error) {
	if cgid == 0 {
		if cgid, err = CgroupID(cgroupDir); err != nil {
			return err
		}
	}
	unlock, err := lockPinDir(k.pinDir)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()

	if err := k.maps.ZoneByCgid.Delete(cgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unregister cgroup %d: %w", cgid, err)
	}
	if err := k.maps.MemberNetns.Delete(cgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("forget the network namespace of cgroup %d: %w", cgid, err)
	}
	if err := k.maps.LearnMembers.Delete(cgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("forget the learning member %d: %w", cgid, err)
	}
	// An address a member sharing the namespace still holds stays.
	if err := k.removeMemberAddrs(cgid); err != nil {
		return err
	}
	// The kernel detaches a cgroup's programs itself when the cgroup is
	// removed, as a deleted container's is: then only the pins are left,
	// and opening each link to detach it again cost five calls a program.
	removed := cgroupDir != "" && cgroupRemoved(cgroupDir, cgid)
	return k.unpinMember(cgid, removed)
}

// unpinMember detaches (or, when the cgroup is gone, only unpins) the
// links of a member and removes its pin directory. The caller holds the
// pin-directory lock.
func (k *Kernel) unpinMember(cgid uint64, cgroupRemoved bool) error {
	dir := memberDir(k.pinDir, cgid)
	var errs []error
	for _, p := range backendPrograms(k.lsm) {
		if !p.perMember {
			continue
		}
		pin := filepath.Join(dir, p.name)
		if !cgroupRemoved {
			errs = append(errs, detachPinned(pin))
		} else if err := os.Remove(pin); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unpin %s: %w", pin, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("detach programs from cgroup %d: %w", cgid, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove member pin directory: %w", err)
	}
	return nil
}

// PruneMemberPins detaches the links of every member pin directory whose
// cgroup is registered in no zone and not kept, and removes the directory.
// AddMember pins before it registers and RemoveMember unregisters before
// it unpins, so a process killed between the two leaves such a directory,
// which Members cannot see. It returns the cgroup ids it pruned.
func (k *Kernel) PruneMemberPins(keep func(cgid uint64) bool) ([]uint64, error) {
	unlock, err := lockPinDir(k.pinDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ents, err := os.ReadDir(membersDir(k.pinDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list member pins: %w", err)
	}
	var pruned []uint64
	var errs []error
	for _, ent := range ents {
		cgid, err := strconv.ParseUint(ent.Name(), 10, 64)
		if err != nil || !ent.IsDir() || keep(cgid) {
			continue // not a member directory rauha made, or wanted
		}
		var zone uint32
		err = k.maps.ZoneByCgid.Lookup(cgid, &zone)
		if err == nil {
			continue
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("look up cgroup %d: %w", cgid, err))
			continue
		}
		if err := k.unpinMember(cgid, false); err != nil {
			errs = append(errs, err)
			continue
		}
		pruned = append(pruned, cgid)
	}
	return pruned, errors.Join(errs...)
}

// cgroupRemoved tells whether the cgroup with id cgid no longer exists at
// cgroupDir: the directory is gone, or it is a new cgroup of the same name.
func cgroupRemoved(cgroupDir string, cgid uint64) bool {
	id, err := CgroupID(cgroupDir)
	return errors.Is(err, os.ErrNotExist) || (err == nil && id != cgid)
}

// Members returns every registered cgroup id and its zone.
func (k *Kernel) Members() (map[uint64]uint32, error) {
	out := map[uint64]uint32{}
	err := eachHashEntry(k.maps.ZoneByCgid, func(cgid *uint64, zone *uint32) { out[*cgid] = *zone })
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return out, nil
}

// SetMemberNetns records the network namespace at netnsPath (a
// /proc/PID/ns/net) as member cgid's own, shared with no task outside its
// zone: loopback destinations there are not egress. Every other netns's
// loopback (the host's, one joined from elsewhere) is egress like any
// address.
func (k *Kernel) SetMemberNetns(cgid uint64, netnsPath string) (err error) {
	cookie, err := NetnsCookie(netnsPath)
	if err != nil {
		return err
	}
	unlock, err := lockPinDir(k.pinDir)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()
	if err := k.maps.MemberNetns.Update(cgid, cookie, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("record the network namespace of cgroup %d (member_netns full?): %w", cgid, err)
	}
	return nil
}

// MemberNetns returns the cookie of the network namespace registered as
// member cgid's own, 0 when there is none.
func (k *Kernel) MemberNetns(cgid uint64) (uint64, error) {
	var cookie uint64
	err := k.maps.MemberNetns.Lookup(cgid, &cookie)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look up the network namespace of cgroup %d: %w", cgid, err)
	}
	return cookie, nil
}

// NetnsCookie returns the cookie by which the kernel's programs know the
// network namespace at path: SO_NETNS_COOKIE of a socket made in it.
func NetnsCookie(path string) (uint64, error) {
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer unix.Close(target)
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open this thread's network namespace: %w", err)
	}
	defer unix.Close(self)

	runtime.LockOSThread()
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return 0, fmt.Errorf("enter network namespace %s: %w", path, err)
	}
	fd, sockErr := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		// Still locked: the runtime ends this thread instead of reusing
		// it in the wrong namespace.
		if sockErr == nil {
			unix.Close(fd)
		}
		return 0, fmt.Errorf("return from network namespace %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	if sockErr != nil {
		return 0, fmt.Errorf("socket in network namespace %s: %w", path, sockErr)
	}
	defer unix.Close(fd)
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, fmt.Errorf("cookie of network namespace %s (kernel 5.14 or later): %w", path, err)
	}
	return cookie, nil
}

func checkZone(zone uint32) error {
	if zone == 0 || zone >= MaxZones {
		return fmt.Errorf("zone id %d out of range: 1 ≤ zone < %d (0 is the host)", zone, MaxZones)
	}
	return nil
}
