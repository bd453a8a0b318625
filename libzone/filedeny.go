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
// both backends: an inode map cannot say "everything but these". read_only
// paths also go into the map (FileChange) for what Landlock does not judge:
// metadata changes, xattrs, ACLs and new names (bpf/lsmfile.bpf.h). Denied
// inodes are closed to those too, and to connect() when they are sockets.
//
// The kernel keys by inode, so every deny path is resolved inside each
// running member's root (/proc/<pid>/root, openat2 RESOLVE_IN_ROOT: a
// symlink cannot lead out of the container) when the member joins (its init
// exists, its mounts are done, no user code has run) and on every policy
// push. A denied directory is a tree: the directory and every inode below
// it at that moment are listed, so their hard links elsewhere are denied
// too; a read_only directory is listed alone. When a list holds a
// directory, the kernel also walks up from every inode it judges to the
// listed directories, so files made below one after the last resolution
// are covered. A listed path that does not exist is listed by name: its
// directory's inode and its final name, or, when its directory is missing
// too, the deepest directory of it that exists and the names below it (a
// chain of at most bpf.FileChainMax names; a longer one is refused), so a
// file created or moved there later, with its directories or in a
// directory moved into place, is denied too, and, when it is a directory,
// what is below it. The root of every mount nested below a listed directory
// in the member's mount namespace is listed too, with the directory's bits
// (mountsBelow): the hooks that see no mount walk up only within one file
// system. Known limits (docs/policy.md "Paths"): a missing
// directory on a path is matched by its name, so a symlink made there
// later is not followed; an inode is denied wherever it is linked.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
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
func (b backend) landlockPolicy(p *zone.Policy) *zone.Policy {
	return landlockPart(p, b.lsm)
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
func (b backend) landlockRulesFor(p *zone.Policy, cfg *configs.Config) landlock.Rules {
	r := landlockRules(b.landlockPolicy(p), cfg, b.lsm)
	if cfg != nil {
		r.ScopeAbstractUnix = landlockRules(p, cfg, b.lsm).ScopeAbstractUnix
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
	if ke.lsm {
		var err error
		if paths, _, err = fileDenies(&z.Policy, z.Members, &kp, nil); err != nil {
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
	if !ke.lsm || !hasInodeRules(&z.Policy) {
		return nil, nil
	}
	kp, err := ke.k.PolicyOf(z.ID)
	if err != nil {
		return nil, fmt.Errorf("zone %s: read the kernel policy: %w", z.Name, err)
	}
	var paths DenyPaths
	if paths, _, err = fileDenies(&z.Policy, members, &kp, nil); err != nil {
		return nil, fmt.Errorf("zone %s: deny lists: %w", z.Name, err)
	}
	if err := ke.k.SetPolicy(z.ID, kp); err != nil {
		return nil, fmt.Errorf("push policy of zone %s to the kernel: %w", z.Name, err)
	}
	return paths, nil
}

// hasInodeRules reports whether p has rules the bpf-lsm backend keeps in
// the inode list: the deny lists, and read_only (for metadata and names,
// which Landlock does not judge).
func hasInodeRules(p *zone.Policy) bool {
	return len(p.Filesystem.Deny)+len(p.Exec.Deny)+len(p.Filesystem.ReadOnly) > 0
}

// verifyFileDenies adds to want what Apply would push for these members,
// given what the kernel holds for the zone (nil when unknown): a listed
// path that was missing at the last push is denied by its name, also once
// a file is created there, so where the kernel holds the name the path is
// expected by name, not by the inodes now at it (the next push lists
// those; until then the path and everything below it are denied by the
// name, only hard links made to the new file elsewhere are not; a path
// held by a chain of names from a directory higher up likewise). Likewise
// an inode made below a denied directory since the last push is expected
// only when the kernel does not hold a directory above it: the kernel's
// walk up denies it already (only its hard links elsewhere are not). The
// root of a mount below a listed directory is always expected: the inode
// hooks' walk does not leave its file system. It returns those mounts.
func (ke *kernelEnforcer) verifyFileDenies(p *zone.Policy, members []zone.Container, kernel *bpf.ZonePolicy, want *bpf.ZonePolicy) ([]nestedMount, error) {
	if !ke.lsm {
		return nil, nil
	}
	_, mounts, err := fileDenies(p, members, want, kernel)
	return mounts, err
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

// fileDenies resolves p's deny and read_only lists in every running
// member's root into kp's FileDenies, FileTrees and FileNames. Members
// without a live process are skipped: they run nothing to deny. A denied
// directory is listed with every inode below it (their other names, hard
// links made elsewhere, are denied too); a read_only directory only itself:
// the kernel's walk up from an inode finds it, and Landlock keeps new names
// from being made below it. A listed path that does not exist but whose
// directory does is listed by name (the directory's inode and the final
// name), which denies a file created or moved there later; one whose
// directory is missing too by a chain of names (missingPathInRoot). kernel,
// when not nil, is what the kernel holds (verifyFileDenies): a path whose
// name or chain it holds is listed by it, and an inode below a directory it
// holds (with the same bits, and the walk on) is left out unless it holds
// the inode too. The root of each mount nested below a listed directory
// is listed with the directory's bits, and returned (Held: the kernel
// holds it).
func fileDenies(p *zone.Policy, members []zone.Container, kp *bpf.ZonePolicy, kernel *bpf.ZonePolicy) (DenyPaths, []nestedMount, error) {
	paths := DenyPaths{}
	kp.FileDenies, kp.FileTrees, kp.FileNames, kp.FileChains = nil, false, nil, nil
	if !hasInodeRules(p) {
		return paths, nil, nil
	}
	var mounts []nestedMount
	heldMask := map[string]bpf.FileAccess{}
	if kernel != nil {
		for _, d := range kernel.FileDenies {
			heldMask[inodeKey(d.Dev, d.Ino)] |= d.Mask
		}
	}
	walks := kernel != nil && kernel.FileTrees
	seen := map[string]bool{}
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
		dirs := map[fileID]bpf.FileAccess{} // the listed directories
		// The directories of this member the kernel holds, by path in
		// its root and bits.
		heldDirs := map[string]bpf.FileAccess{}
		add := func(dev, ino uint64, mask bpf.FileAccess, path string) {
			if have := heldMask[inodeKey(dev, ino)]; have&mask == mask {
				heldDirs[path] |= mask
			} else if walks && heldAbove(heldDirs, path, mask) {
				return
			}
			kp.FileDenies = append(kp.FileDenies, bpf.FileDeny{Dev: dev, Ino: ino, Mask: mask})
			if _, ok := paths[inodeKey(dev, ino)]; !ok {
				paths[inodeKey(dev, ino)] = path
			}
		}
		for _, l := range []struct {
			paths []string
			mask  bpf.FileAccess
			tree  bool // list every inode below a directory
		}{{p.Filesystem.Deny, bpf.FileOpen, true}, {p.Exec.Deny, bpf.FileExec, true}, {p.Filesystem.ReadOnly, bpf.FileChange, false}} {
			for _, path := range l.paths {
				byName, tooDeep, err := missingPathInRoot(root, path, l.mask, kernel != nil)
				if err != nil {
					unix.Close(root)
					return nil, nil, fmt.Errorf("container %s: %s: %w", m.ID, path, err)
				}
				if c, ok := heldChain(kernel, byName); ok {
					addByName(kp, paths, c, path)
					continue
				}
				var top fileID // the inode at path, called first
				found := false
				dir, err := denyPathInRoot(root, path, l.tree, func(dev, ino uint64, at string) {
					if !found {
						top = fileID{dev, ino}
					}
					found = true
					add(dev, ino, l.mask, at)
				}, &budget)
				if err != nil {
					unix.Close(root)
					return nil, nil, fmt.Errorf("container %s: %s: %w", m.ID, path, err)
				}
				if dir {
					dirs[top] |= l.mask
				}
				kp.FileTrees = kp.FileTrees || dir
				if found {
					continue
				}
				if tooDeep != nil {
					unix.Close(root)
					return nil, nil, fmt.Errorf("container %s: %s: %w", m.ID, path, tooDeep)
				}
				if len(byName) > 0 {
					addByName(kp, paths, byName[0], path)
				}
			}
		}
		// Never left out as below a held directory, unlike the inodes
		// above: the walk from a file made in the mount later ends at
		// its root.
		nested, err := nestedMounts(pid, root, dirs)
		unix.Close(root)
		if err != nil {
			return nil, nil, fmt.Errorf("container %s: %w", m.ID, err)
		}
		for _, n := range nested {
			if err := spend(&budget); err != nil {
				return nil, nil, fmt.Errorf("container %s: %w", m.ID, err)
			}
			key := inodeKey(n.Dev, n.Ino)
			n.Container, n.Held = m.ID, heldMask[key]&n.Mask == n.Mask
			mounts = append(mounts, n)
			kp.FileDenies = append(kp.FileDenies, bpf.FileDeny{Dev: n.Dev, Ino: n.Ino, Mask: n.Mask})
			if _, ok := paths[key]; !ok {
				paths[key] = n.Path
			}
		}
	}
	return paths, mounts, nil
}

// fileID is an inode: its device and number as stat(2) reports them.
type fileID struct{ dev, ino uint64 }

// nestedMount is a mount of a member's mount namespace whose mount point
// is below a listed directory: a file system of its own (a tmpfs, a bind
// of a directory elsewhere, a bound file). The hooks that have no mount to
// follow (inode_setattr for utimensat, inode_setxattr, inode_removexattr,
// inode_set_acl, inode_remove_acl) walk up from a file made in it after
// the push only to the root of its file system, never to the listed
// directory; so its root is listed with the bits of the listed directories
// above it, and the walk ends on a listed inode. The path hooks follow the
// mount point and need none of it.
type nestedMount struct {
	Container string         // the member whose namespace has it
	Path      string         // its mount point in the member's root
	Dev, Ino  uint64         // its root, as the member reaches it there
	Mask      bpf.FileAccess // the bits of the listed directories above it
	Held      bool           // the kernel holds its root with Mask (verify)
}

// nestedMounts are the mounts of pid's mount namespace nested below dirs
// (the listed directories resolved in root, pid's root, with their bits);
// none when dirs is empty: then the mount table is not even read.
func nestedMounts(pid, root int, dirs map[fileID]bpf.FileAccess) ([]nestedMount, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	mounts, err := mountsOf(pid)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil, nil // exited meanwhile
	} else if err != nil {
		return nil, fmt.Errorf("read the mounts of pid %d: %w", pid, err)
	}
	return mountsBelow(root, mounts, dirs)
}

// mountsBelow picks from mounts (a mount table whose mount points are
// paths in root) the mounts whose mount point lies strictly below one of
// dirs, by inode: a listed directory reached by another name (a symlink,
// a bind) is the same directory, as it is for the kernel. Of the mounts
// stacked at one mount point only the topmost is reachable, and listed; a
// mount point that no longer resolves (unmounted meanwhile) is left out.
func mountsBelow(root int, mounts []*mountinfo.Info, dirs map[fileID]bpf.FileAccess) ([]nestedMount, error) {
	ids := map[string]fileID{} // by path in root; the zero fileID when missing
	idOf := func(p string) (fileID, error) {
		if id, ok := ids[p]; ok {
			return id, nil
		}
		st, err := statIn(root, p)
		if err != nil {
			return fileID{}, fmt.Errorf("mount point %s: %w", p, err)
		}
		var id fileID
		if st != nil {
			id = fileID{st.Dev, st.Ino}
		}
		ids[p] = id
		return id, nil
	}
	var out []nestedMount
	seen := map[string]bool{}
	for _, m := range mounts {
		p := filepath.Clean(m.Mountpoint)
		if p == "/" || !filepath.IsAbs(p) || seen[p] {
			continue
		}
		seen[p] = true
		var mask bpf.FileAccess
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			id, err := idOf(d)
			if err != nil {
				return nil, err
			}
			mask |= dirs[id]
			if d == "/" {
				break
			}
		}
		if mask == 0 {
			continue
		}
		id, err := idOf(p)
		if err != nil {
			return nil, err
		}
		if id != (fileID{}) {
			out = append(out, nestedMount{Path: p, Dev: id.dev, Ino: id.ino, Mask: mask})
		}
	}
	return out, nil
}

// heldAbove reports whether a directory above path (a path in a member's
// root) is in held with every bit of mask.
func heldAbove(held map[string]bpf.FileAccess, path string, mask bpf.FileAccess) bool {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if held[d]&mask == mask {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

// nameKey is the DenyPaths key of a name entry: the kernel reports a
// denial by name with the directory's inode and the name (a chain: by its
// last link, bpf.FileDenyChain.Last).
func nameKey(n bpf.FileDenyName) string { return inodeKey(n.Dev, n.Ino) + "/" + n.Name }

// addByName lists path in kp by the name or chain of names c, and names
// it in paths.
func addByName(kp *bpf.ZonePolicy, paths DenyPaths, c bpf.FileDenyChain, path string) {
	if len(c.Names) == 1 {
		n := bpf.FileDenyName{Dev: c.Dev, Ino: c.Ino, Name: c.Names[0], Mask: c.Mask}
		kp.FileNames = append(kp.FileNames, n)
		paths[nameKey(n)] = path
		return
	}
	kp.FileChains = append(kp.FileChains, c)
	paths[nameKey(c.Last())] = path
}

// heldChain is the first of cands that the kernel holds with every bit.
func heldChain(kernel *bpf.ZonePolicy, cands []bpf.FileDenyChain) (bpf.FileDenyChain, bool) {
	if kernel == nil {
		return bpf.FileDenyChain{}, false
	}
	for _, c := range cands {
		if len(c.Names) == 1 {
			if slices.ContainsFunc(kernel.FileNames, func(h bpf.FileDenyName) bool {
				return h.Dev == c.Dev && h.Ino == c.Ino && h.Name == c.Names[0] && h.Mask&c.Mask == c.Mask
			}) {
				return c, true
			}
			continue
		}
		if slices.ContainsFunc(kernel.FileChains, func(h bpf.FileDenyChain) bool {
			return h.Dev == c.Dev && h.Ino == c.Ino && slices.Equal(h.Names, c.Names) && h.Mask&c.Mask == c.Mask
		}) {
			return c, true
		}
	}
	return bpf.FileDenyChain{}, false
}

// missingPathInRoot is how path (clean, absolute) is denied inside root
// while it is missing: by the deepest directory on it that exists, as the
// container resolves it, and the names below it (one: a name entry; more:
// a chain), first in byName. A component that is not a directory (a file,
// a dangling symlink) counts as missing: what is made there later is
// matched by its name. With all, byName goes on with the same path from
// every existing directory above (up to bpf.FileChainMax names), for
// verify: a path the kernel holds by a chain from higher up is expected by
// it while the kernel does.
//
// tooDeep is set when the path cannot be denied by names (more than
// bpf.FileChainMax missing components, or one longer than the kernel
// looks up): an error only when the path is missing. "/" has no name.
func missingPathInRoot(root int, path string, mask bpf.FileAccess, all bool) (byName []bpf.FileDenyChain, tooDeep error, err error) {
	if path == "/" {
		return nil, nil, nil
	}
	comps := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := len(comps) - 1; i >= 0; i-- {
		dir := "/" + strings.Join(comps[:i], "/")
		fd, err := unix.Openat2(root, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			continue
		} else if err != nil {
			return nil, nil, fmt.Errorf("resolve %s in the container root: %w", dir, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return nil, nil, fmt.Errorf("stat %s: %w", dir, err)
		}
		rest := comps[i:]
		if len(rest) > bpf.FileChainMax {
			if len(byName) == 0 {
				tooDeep = fmt.Errorf("%d components below %s, the deepest directory of it that exists, are missing; at most %d can be denied before they exist: create %s first, or deny a shorter path",
					len(rest), dir, bpf.FileChainMax, filepath.Join(dir, filepath.Join(rest[:len(rest)-bpf.FileChainMax]...)))
			}
			return byName, tooDeep, nil
		}
		if n := slices.IndexFunc(rest, func(s string) bool { return len(s) > bpf.FileNameMax }); n >= 0 {
			if len(byName) == 0 {
				tooDeep = fmt.Errorf("the missing component %q is longer than %d bytes: the kernel cannot deny what is made there later; create %s first",
					rest[n], bpf.FileNameMax, filepath.Join(dir, filepath.Join(rest[:n+1]...)))
			}
			return byName, tooDeep, nil
		}
		byName = append(byName, bpf.FileDenyChain{Dev: st.Dev, Ino: st.Ino, Names: slices.Clone(rest), Mask: mask})
		if !all {
			break
		}
	}
	return byName, nil, nil
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
// directory), and, with tree, for every inode below it when it is a
// directory; dir reports that it is one. The path is resolved as the
// container would (a final symlink is followed: exec and open act on the
// target), but never leaves root. A path that does not exist denies
// nothing.
func denyPathInRoot(root int, path string, tree bool, add func(dev, ino uint64, at string), budget *int) (dir bool, err error) {
	fd, err := unix.Openat2(root, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("resolve in the container root: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	if err := spend(budget); err != nil {
		return false, err
	}
	add(st.Dev, st.Ino, path)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, nil
	}
	if !tree {
		return true, nil
	}
	return true, denyTree(fd, path, add, budget)
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

// fileRoutes are the ways to reach or change an inode besides open and
// exec, and the bpf-lsm programs that judge them against the inode list
// (bpf/lsmfile.bpf.h). denyOnly: only a deny list closes it (read_only
// says nothing about reading).
var fileRoutes = []struct {
	name     string
	what     string
	programs []string
	denyOnly bool
}{
	{"file metadata", "chmod, chown, utimensat, truncate, xattr and ACL changes", []string{"lsm/inode_setattr", "lsm/inode_setxattr", "lsm/inode_removexattr", "lsm/inode_set_acl", "lsm/inode_remove_acl"}, false},
	{"file names", "new hard links to, renames and removal of listed inodes", []string{"lsm/inode_link", "lsm/inode_rename", "lsm/inode_unlink", "lsm/inode_rmdir"}, false},
	{"new entries", "create, mknod, mkdir, symlink, link and rename into listed directories and at listed names, also in mounts nested below them; chmod, chown, truncate, unlink and rmdir there too", []string{"lsm/path_chmod", "lsm/path_chown", "lsm/path_truncate", "lsm/path_unlink", "lsm/path_rmdir", "lsm/path_mknod", "lsm/path_mkdir", "lsm/path_symlink", "lsm/path_link", "lsm/path_rename"}, false},
	{"file handles", "open_by_handle_at (judged by inode at open)", []string{"lsm/file_open"}, true},
	{"unix sockets", "connect and send to a socket bound in a denied path", []string{"lsm/unix_stream_connect", "lsm/unix_may_send"}, true},
}

// verifyFileRoutes adds a check per route of fileRoutes, one for files
// made below a listed directory after the list was resolved, and one for
// the mounts nested below listed directories, on bpf-lsm for a zone with
// inode rules. attached: the attached programs (nil when unknown); kernel:
// the zone's policy as the kernel holds it; mounts: what verifyFileDenies
// found.
func (ke *kernelEnforcer) verifyFileRoutes(p *zone.Policy, attached []string, kernel *bpf.ZonePolicy, want *bpf.ZonePolicy, mounts []nestedMount, r *zone.IsolationReport) {
	if !ke.lsm || !hasInodeRules(p) {
		return
	}
	deny := len(p.Filesystem.Deny)+len(p.Exec.Deny) > 0
	for _, rt := range fileRoutes {
		if rt.denyOnly && !deny {
			continue
		}
		var missing []string
		for _, prog := range rt.programs {
			if !slices.Contains(attached, prog) {
				missing = append(missing, prog)
			}
		}
		if len(missing) > 0 {
			r.Add(rt.name, false, "%s: %s not attached; run 'rauha zone reconcile'", rt.what, strings.Join(missing, ", "))
		} else {
			r.Add(rt.name, true, "%s: denied by %s", rt.what, strings.Join(rt.programs, ", "))
		}
	}
	switch {
	case !want.FileTrees:
		r.Add("files below listed directories", true, "the deny and read_only lists name no directory")
	case kernel == nil || !kernel.FileTrees:
		r.Add("files below listed directories", false, "the kernel does not walk up from the inodes it judges: a file made below a listed directory since the last push is not covered; run 'rauha zone reconcile'")
	default:
		r.Add("files below listed directories", true, "every file check walks up to the listed directories, across mount points and bind mounts: files made below them later are covered too")
	}
	if want.FileTrees {
		verifyNestedMounts(mounts, r)
	}
}

// verifyNestedMounts checks that the kernel lists the root of every mount
// nested below a listed directory: one mounted since the last push (a
// host mount propagating into a member) leaves utimensat, xattr and ACL
// changes of the files made in it unjudged until the next push.
func verifyNestedMounts(mounts []nestedMount, r *zone.IsolationReport) {
	var held, missing []string
	for _, n := range mounts {
		if n.Held {
			held = append(held, "container "+n.Container+": "+n.Path)
		} else {
			missing = append(missing, "container "+n.Container+": "+n.Path)
		}
	}
	switch {
	case len(missing) > 0:
		r.Add("mounts below listed directories", false, "%s: mounted below a listed directory since the last push, its root is not in the kernel's list: utimensat, xattr and ACL changes of files made in it are not judged; run 'rauha zone reconcile'", strings.Join(missing, ", "))
	case len(held) == 0:
		r.Add("mounts below listed directories", true, "no mount below a listed directory")
	default:
		r.Add("mounts below listed directories", true, "listed with the directory above them, so utimensat, xattr and ACL changes of files made in them later are judged too: %s", strings.Join(held, ", "))
	}
}
