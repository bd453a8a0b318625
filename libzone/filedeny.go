package libzone

// On the bpf-lsm backend filesystem.deny and exec.deny are enforced by the
// LSM programs alone (bpf/lsm.bpf.h: file_open and bprm_check_security look
// the opened inode up in the file_deny map), not by Landlock:
//
//   - the map is shared by every task of the zone, so "rauha zone update"
//     reaches running processes on their next open or exec, both ways (a
//     Landlock domain can never be relaxed, so keeping the deny rules in
//     Landlock too would make a lifted denial stick until restart);
//   - the hooks have an audit verdict, so mode = "audit" works for deny
//     lists (Landlock has none).
//
// Allow-lists (writable_paths, read_only, exec.allow) stay Landlock rules on
// both backends: an inode map cannot say "everything but these".
//
// The kernel keys by inode, so every deny path is resolved inside each
// running member's root (/proc/<pid>/root, openat2 RESOLVE_IN_ROOT: a
// symlink cannot lead out of the container) when the member joins (its init
// exists, its mounts are done, no user code has run) and on every policy
// push. A directory is a tree: the directory and every inode below it at
// that moment are denied. Known limits (docs/policy.md "Paths"): files
// created in a denied directory, or at a denied path that did not exist,
// after the last resolution are not denied until the next push ("rauha zone
// update" or "zone reconcile"); an inode is denied wherever it is linked.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/landlock"
	"github.com/rauha-runtime/rauha/zone"
)

// maxDenyInodes bounds the inodes one zone's deny lists may resolve to per
// member: denying a huge tree (or "/") is refused instead of filling the
// kernel map or stalling a container start.
const maxDenyInodes = 16384

// fileDenyMetaPrefix + zone id is the store meta key of the zone's
// "dev:ino" → path map, which names the object of file and exec events (the
// kernel reports only the inode).
const fileDenyMetaPrefix = "filedeny/"

func fileDenyMetaKey(id uint32) string {
	return fileDenyMetaPrefix + strconv.FormatUint(uint64(id), 10)
}

func inodeKey(dev, ino uint64) string {
	return strconv.FormatUint(dev, 10) + ":" + strconv.FormatUint(ino, 10)
}

// landlockPolicy is the part of p that Landlock enforces on this backend.
func (ke *kernelEnforcer) landlockPolicy(p *zone.Policy) *zone.Policy {
	return landlockPart(p, ke.k.LSM())
}

// landlockPart is the part of p that Landlock enforces: everything on the
// fallback, everything but the deny lists on bpf-lsm (lsm).
func landlockPart(p *zone.Policy, lsm bool) *zone.Policy {
	if !lsm || len(p.Filesystem.Deny)+len(p.Exec.Deny) == 0 {
		return p
	}
	q := *p
	q.Filesystem.Deny, q.Exec.Deny = nil, nil
	return &q
}

// landlockRulesFor is landlockRules of the Landlock part of p. Abstract
// unix socket scoping is decided on the whole policy, as on the fallback:
// moving the deny lists to the LSM must not take it from a zone (the LSM
// has no hook for it).
func (ke *kernelEnforcer) landlockRulesFor(p *zone.Policy, cfg *configs.Config) landlock.Rules {
	r := landlockRules(ke.landlockPolicy(p), cfg, ke.k.LSM())
	if cfg != nil {
		r.ScopeAbstractUnix = landlockRules(p, cfg, ke.k.LSM()).ScopeAbstractUnix
	}
	return r
}

// setPolicy pushes kp, on bpf-lsm with the zone's deny inodes resolved in
// its members' roots, and returns their names. The engine holds policy.lock
// from reading the members to storing the names, as around RefreshDenies:
// two pushes never interleave, so a member that joins while the policy
// changes keeps its inodes.
func (ke *kernelEnforcer) setPolicy(z *ResolvedZone, kp bpf.ZonePolicy) (DenyPaths, error) {
	var paths DenyPaths
	if ke.k.LSM() {
		var err error
		if kp.FileDenies, paths, err = fileDenies(&z.Policy, z.Members); err != nil {
			return nil, fmt.Errorf("zone %s: deny lists: %w", z.Name, err)
		}
	}
	if err := ke.k.SetPolicy(z.ID, kp); err != nil {
		return nil, fmt.Errorf("push policy of zone %s to the kernel: %w", z.Name, err)
	}
	return paths, nil
}

// RefreshDenies adds the deny inodes of a joining member to the kernel
// before its cgroup becomes a member (see Enforcer.RefreshDenies); z is the
// zone as stored, the rest of the kernel policy is kept as it is.
func (ke *kernelEnforcer) RefreshDenies(z *zone.Zone, members []zone.Container) (DenyPaths, error) {
	if !ke.k.LSM() || !hasDenyLists(&z.Policy) {
		return nil, nil
	}
	kp, err := ke.k.PolicyOf(z.ID)
	if err != nil {
		return nil, fmt.Errorf("zone %s: read the kernel policy: %w", z.Name, err)
	}
	var paths DenyPaths
	if kp.FileDenies, paths, err = fileDenies(&z.Policy, members); err != nil {
		return nil, fmt.Errorf("zone %s: deny lists: %w", z.Name, err)
	}
	if err := ke.k.SetPolicy(z.ID, kp); err != nil {
		return nil, fmt.Errorf("push policy of zone %s to the kernel: %w", z.Name, err)
	}
	return paths, nil
}

// hasDenyLists reports whether p denies any path (bpf-lsm denies them by
// inode).
func hasDenyLists(p *zone.Policy) bool {
	return len(p.Filesystem.Deny)+len(p.Exec.Deny) > 0
}

// verifyFileDenies adds to want what Apply would push for these members.
func (ke *kernelEnforcer) verifyFileDenies(p *zone.Policy, members []zone.Container, want *bpf.ZonePolicy) error {
	if !ke.k.LSM() {
		return nil
	}
	denies, _, err := fileDenies(p, members)
	want.FileDenies = denies
	return err
}

// fileDenyPathsOf reads the recorded path maps of zones, by zone id.
func fileDenyPathsOf(tx *zone.Tx, zones []zone.Zone) map[uint32]DenyPaths {
	out := map[uint32]DenyPaths{}
	for _, z := range zones {
		raw, err := tx.Meta(fileDenyMetaKey(z.ID))
		if err != nil || raw == "" {
			continue
		}
		var m DenyPaths
		if json.Unmarshal([]byte(raw), &m) == nil {
			out[z.ID] = m
		}
	}
	return out
}

// fileDenies resolves p's deny lists in every running member's root.
// Members without a live process are skipped: they run nothing to deny.
func fileDenies(p *zone.Policy, members []zone.Container) ([]bpf.FileDeny, DenyPaths, error) {
	paths := DenyPaths{}
	if !hasDenyLists(p) {
		return nil, paths, nil
	}
	seen := map[string]bool{}
	var out []bpf.FileDeny
	for _, m := range members {
		pid := memberPid(&m)
		if pid == 0 || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		root, err := unix.Open(procRoot(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			continue // exited meanwhile
		} else if err != nil {
			return nil, nil, fmt.Errorf("container %s: open %s: %w", m.ID, procRoot(pid), err)
		}
		budget := maxDenyInodes
		add := func(dev, ino uint64, mask bpf.FileAccess, path string) {
			out = append(out, bpf.FileDeny{Dev: dev, Ino: ino, Mask: mask})
			if _, ok := paths[inodeKey(dev, ino)]; !ok {
				paths[inodeKey(dev, ino)] = path
			}
		}
		for _, l := range []struct {
			paths []string
			mask  bpf.FileAccess
		}{{p.Filesystem.Deny, bpf.FileOpen}, {p.Exec.Deny, bpf.FileExec}} {
			for _, path := range l.paths {
				if err := denyPathInRoot(root, path, func(dev, ino uint64, at string) { add(dev, ino, l.mask, at) }, &budget); err != nil {
					unix.Close(root)
					return nil, nil, fmt.Errorf("container %s: %s: %w", m.ID, path, err)
				}
			}
		}
		unix.Close(root)
	}
	return out, paths, nil
}

// memberPid is a process of the member, 0 when none runs: the recorded init
// while it is still in the member's cgroup, else any process of the cgroup
// (the init of a joining member is not recorded yet).
func memberPid(c *zone.Container) int {
	if c.CgroupPath == "" {
		return 0
	}
	if c.Pid > 0 {
		if raw, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/cgroup"); err == nil {
			for line := range strings.Lines(string(raw)) {
				if cg, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok && cg == c.CgroupPath {
					return c.Pid
				}
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(bpf.UnifiedMountpoint(), c.CgroupPath, "cgroup.procs"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return pid
}

// denyPathInRoot calls add for the inode path names inside root (an open
// directory), and for every inode below it when it is a directory. The path
// is resolved as the container would (a final symlink is followed: exec and
// open act on the target), but never leaves root. A path that does not
// exist denies nothing.
func denyPathInRoot(root int, path string, add func(dev, ino uint64, at string), budget *int) error {
	fd, err := unix.Openat2(root, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	} else if err != nil {
		return fmt.Errorf("resolve in the container root: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if err := spend(budget); err != nil {
		return err
	}
	add(st.Dev, st.Ino, path)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return denyTree(fd, path, add, budget)
}

func spend(budget *int) error {
	if *budget--; *budget < 0 {
		return fmt.Errorf("the deny lists cover more than %d inodes: deny smaller trees", maxDenyInodes)
	}
	return nil
}

// denyTree adds every inode below the directory dir (symlinks as
// themselves, never followed).
func denyTree(dir int, at string, add func(dev, ino uint64, at string), budget *int) error {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", at, err)
	}
	f := os.NewFile(uintptr(fd), at)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", at, err)
	}
	for _, ent := range ents {
		name := ent.Name()
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil {
			return fmt.Errorf("stat %s: %w", filepath.Join(at, name), err)
		}
		if err := spend(budget); err != nil {
			return err
		}
		add(st.Dev, st.Ino, filepath.Join(at, name))
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil {
			return fmt.Errorf("open %s: %w", filepath.Join(at, name), err)
		}
		err = denyTree(sub, filepath.Join(at, name), add, budget)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}
