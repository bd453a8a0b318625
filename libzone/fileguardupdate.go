package libzone

// A zone update reaches running members' file rules on the fallback through
// their mount namespaces. A process's Landlock domain cannot change, but the
// mounts it resolves paths through can: the mounts that hold a file rule at
// create (fileguard.go) are made in each running member's mount namespace,
// seen from its init, so that processes already running meet them on their
// next path lookup. What is mounted differs from create where Landlock held
// the rule at create and holds nothing for a running process:
//
//   - a read_only path gets a read-only recursive copy of itself (at create:
//     a read-only bind, bind mounts beneath it read-only; Landlock refused
//     writes to the rest): writes, metadata changes, creation and removal
//     beneath it fail with EROFS.
//   - writable_paths (or a read_only "/"), as at create: each writable path
//     on the rootfs gets a copy of itself, then the root and the bind
//     mounts outside the writable paths are made read-only where they are.
//     The kernel refuses that while a file on the mount is open for
//     writing (EBUSY): the member is named then.
//   - a denied directory is covered with the empty read-only tmpfs, as at
//     create: nothing beneath it has a name (ENOENT).
//   - a denied file, and the other names its inode has in the image (found
//     as at create), gets the null device bound on it read-only and nodev,
//     as a deny path missing at create does: open fails with EACCES, and
//     metadata changes, renames and new links fail as on any mount. A file
//     whose read-only bind create made for a read_only rule gets it too:
//     the container's labels say which binds create made for deny rules
//     (deniedFilesLabel), the mounts look alike.
//   - a deny path that does not exist gets its mount point made (in the
//     rootfs or bind source as at create, else in the container's view, in
//     its own tmpfs) and the null device on it.
//
// Rules an update removes keep their mounts until the container is
// recreated, and a path an update adds to writable_paths stays read-only
// in it: stricter than the stored policy is safe, and the Landlock domains
// of the running processes keep the old rules anyway.
//
// The mounts are made from a locked OS thread that leaves the host's file
// system context (unshare CLONE_FS) for the member's mount namespace and is
// never unlocked: the Go runtime then ends the thread with its goroutine.
// Sources that live on the host (the null device, the tmpfs) are detached
// mounts made before (open_tree, fsmount), and every target is an fd
// resolved inside the container's root, so nothing in the container can
// redirect a mount by swapping a path meanwhile. A target on a shared mount
// is refused: a mount there would propagate to its peers (the host's, with
// rootfsPropagation "shared"). Only CAP_SYS_ADMIN could unmount them, which
// strict admission refuses in a zone with file rules (verify names it), as
// for the mounts made at create. A file opened, or a directory entered as
// cwd, before the update keeps working through that fd, as under any mount.

import (
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// RunningMember is a member with a process, as a zone update hands it to the
// enforcer: its init (pid and start time, to tell it from a process that
// reused the pid) and its container configuration.
type RunningMember struct {
	ID        string
	Pid       int
	StartTime uint64
	Config    *configs.Config
}

// guardOp is one mount to make in a running member.
type guardOp struct {
	path string
	kind guardKind
}

type guardKind int

const (
	guardReadOnly     guardKind = iota // a read-only recursive copy of itself
	guardKeepWritable                  // a copy of itself, writable under a read-only root
	guardInPlace                       // the mount there made read-only (the root, a bind)
	guardMaskDir                       // the empty read-only tmpfs
	guardNull                          // the null device, read-only and nodev
	guardNoexec                        // the mount there made noexec (a writable mount)
	guardNoexecCopy                    // a recursive copy of itself, noexec throughout
)

// guardRunning makes in member m the mounts that hold policy p's read_only
// and deny rules and that it does not have yet; old is the policy the zone
// had before the update (the writable paths it takes away are made
// read-only). links are the other names
// of denied inodes m's mounts hold now when it found some that m's
// deniedLinksLabel does not list yet (nil otherwise): the caller records
// them there, so that verify checks their masks and the next update and
// drain know them.
func guardRunning(m RunningMember, old, p *zone.Policy) (links []string, err error) {
	fs := p.Filesystem
	// A root read-only but for the writable paths (an empty list: nothing
	// writable).
	roRoot := fs.WritablePaths != nil && !slices.Contains(*fs.WritablePaths, "/")
	var writable []string
	if roRoot {
		writable = *fs.WritablePaths
	}
	if !heldByMounts(&fs) {
		return nil, nil
	}
	if !initAlive(m.Pid, m.StartTime) {
		return nil, nil // deleted meanwhile: nothing to guard, nothing to make in its rootfs
	}
	var problems []string
	if len(fs.Deny) > 0 && !handlesDenied(m.Config) && keepsCap(m.Config, p, "CAP_DAC_READ_SEARCH") {
		problems = append(problems, "open_by_handle_at is not denied to its processes (the zone had no deny rule when it was created) and it holds CAP_DAC_READ_SEARCH: a file handle reaches a denied inode (recreate the container)")
	}
	// The create code on a copy of the configuration: the same checks and
	// errors, the mount points of missing deny paths made in the rootfs or
	// the bind source, and the other names of denied files in the image.
	cfg := *m.Config
	cfg.Mounts = make([]*configs.Mount, len(m.Config.Mounts))
	for i, mt := range m.Config.Mounts {
		c := *mt
		cfg.Mounts[i] = &c
	}
	cfg.Labels = slices.DeleteFunc(slices.Clone(cfg.Labels), func(l string) bool {
		return strings.HasPrefix(l, deniedLinksLabel+"=") || strings.HasPrefix(l, deniedFilesLabel+"=")
	})
	cfg.ReadonlyPaths, cfg.MaskPaths = nil, nil
	if err := guardFiles(&zone.Policy{Filesystem: fs}, &cfg); err != nil {
		return nil, err
	}
	found := deniedLinks(&cfg)
	// The writable paths on the rootfs that create binds onto themselves,
	// judged on the member's own mounts.
	var keep []*configs.Mount
	if roRoot {
		rootfs, err := unix.Open(m.Config.Rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open rootfs %s: %w", m.Config.Rootfs, err)
		}
		keep, err = writableBinds(rootfs, m.Config, writable)
		unix.Close(rootfs)
		if err != nil {
			return nil, err
		}
	}

	v, err := openMember(m)
	if err != nil || v == nil {
		return nil, err
	}
	defer v.close()
	mounts, root := v.mounts, v.root

	// In this order: the masks of denied paths first, so that the
	// read-only copies of read_only and writable paths above them copy
	// them along (a mount made beneath a path after its copy is attached
	// would be hidden under the copy), then the copies, then the mounts
	// made read-only where they are.
	var ops []guardOp
	// The other names recorded before, at create and by earlier updates.
	recorded := deniedLinks(m.Config)
	boundAtCreate := labelList(m.Config.Labels, deniedFilesLabel)
	for _, l := range found {
		if !slices.Contains(recorded, l) {
			links = append(slices.Clone(recorded), found...)
			slices.Sort(links)
			links = slices.Compact(links)
			break
		}
	}
	for _, d := range append(slices.Clone(fs.Deny), found...) {
		if d == "/" {
			continue // as at create: Landlock denies it all, nothing would run
		}
		rel := strings.TrimPrefix(path.Clean(d), "/")
		st, err := statIn(root, rel)
		if err != nil {
			return links, fmt.Errorf("filesystem.deny %s: %w", d, err)
		}
		if st == nil {
			// Missing in the rootfs and the bind sources too (guardFiles
			// made the mount point there where it could): on the
			// container's own tmpfs it is made here, in its view.
			err := makeMountpoint(root, "the container's root", rel, &cfg)
			if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) {
				continue // proc, sysfs, a read-only file system: verify names it, as at create
			} else if err != nil {
				return links, fmt.Errorf("filesystem.deny %s: cannot make the mount point that denies it: %w", d, err)
			}
			if st, err = statIn(root, rel); err != nil || st == nil {
				return links, fmt.Errorf("filesystem.deny %s: the mount point made for it is gone: %v", d, err)
			}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if !held(mounts, d, true, m.Pid) {
				ops = append(ops, guardOp{d, guardMaskDir})
			}
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == unix.Mkdev(1, 3) {
			continue // the null device already: masked
		}
		// A read-only bind holds a file denied at create, whose open the
		// init's Landlock domain denies, and a read_only file alike: only
		// the first is held, and only while the zone denied it since
		// (old; an exec meanwhile got a domain of old). The stored policy
		// alone cannot say it: an earlier update may have failed for m.
		wasDenied := slices.Contains(boundAtCreate, d) && (slices.Contains(old.Filesystem.Deny, d) || slices.Contains(found, d))
		if wasDenied && held(mounts, d, false, m.Pid) {
			continue
		}
		ops = append(ops, guardOp{d, guardNull})
	}
	for _, r := range fs.ReadOnly {
		if r != "/" && !held(mounts, r, false, m.Pid) {
			ops = append(ops, guardOp{r, guardReadOnly})
		}
	}
	// A read-only root (read_only "/", or writable_paths): as at create,
	// the writable paths on it are first bound onto themselves, then the
	// root and the bind mounts outside the writable paths are made
	// read-only where they are; and so is what a path the update takes
	// from writable_paths has on it (the copy an earlier update made, a
	// bind), unless a mount of another kind the container was given (a
	// tmpfs) decides, as at create.
	if roRoot || slices.Contains(fs.ReadOnly, "/") {
		if !held(mounts, "/", false, m.Pid) {
			for _, b := range keep {
				ops = append(ops, guardOp{b.Destination, guardKeepWritable})
			}
			ops = append(ops, guardOp{"/", guardInPlace})
		}
		readOnly := func(q string) {
			if t := topMount(mounts, q); t != nil && !mountHas(t, "ro") {
				ops = append(ops, guardOp{q, guardInPlace})
			}
		}
		for _, b := range m.Config.Mounts {
			if b.IsBind() && !underWritable(b.Destination, writable) {
				readOnly(b.Destination)
			}
		}
		// The container's own mounts of other kinds outside the writable
		// paths (a tmpfs: /dev, /dev/shm, /run): at create Landlock refuses
		// writes there, but a running process keeps the domain it had, so
		// they are made read-only where they are, after the writable
		// directories and files on them get a copy of themselves (device
		// nodes stay writable on a read-only mount; a mount below is a
		// mount of its own).
		for _, c := range m.Config.Mounts {
			d := path.Clean(c.Destination)
			t := topMount(mounts, d)
			if c.IsBind() || slices.Contains(fileless, c.Device) || underWritable(d, writable) || t == nil || mountHas(t, "ro") {
				continue
			}
			for _, w := range outermost(writable) {
				w = path.Clean(w)
				if w == d || !within(w, d) || topMount(mounts, w) != nil {
					continue
				}
				st, err := statIn(root, strings.TrimPrefix(w, "/"))
				if err != nil {
					return links, fmt.Errorf("writable path %s: %w", w, err)
				}
				if st != nil && st.Mode&unix.S_IFMT != unix.S_IFCHR && st.Mode&unix.S_IFMT != unix.S_IFBLK {
					ops = append(ops, guardOp{w, guardKeepWritable})
				}
			}
			ops = append(ops, guardOp{d, guardInPlace})
		}
		if w := old.Filesystem.WritablePaths; w != nil {
			for _, q := range *w {
				own := slices.ContainsFunc(m.Config.Mounts, func(c *configs.Mount) bool { return !c.IsBind() && path.Clean(c.Destination) == path.Clean(q) })
				if !underWritable(q, writable) && !own {
					readOnly(q)
				}
			}
		}
	}
	if len(ops) > 0 {
		if err := mountInMember(v.nsfd, root, mounts, ops); err != nil {
			return links, err
		}
	}
	if len(problems) > 0 {
		return links, errors.New(strings.Join(problems, "; "))
	}
	return links, nil
}

// memberView is what a zone update reads of a running member to make
// mounts in it: its mount table, its mount namespace and its root.
type memberView struct {
	mounts []*mountinfo.Info
	nsfd   int
	root   int
}

func (v *memberView) close() {
	unix.Close(v.nsfd)
	unix.Close(v.root)
}

// openMember reads m's view from /proc; nil (and no error) when its init
// has gone (deleted meanwhile: nothing to guard). Everything is read first,
// then the init checked: the pid was not reused meanwhile, so it is all
// the container's.
func openMember(m RunningMember) (*memberView, error) {
	mounts, errMounts := mountsOf(m.Pid)
	nsfd, errNS := unix.Open("/proc/"+strconv.Itoa(m.Pid)+"/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	root, errRoot := unix.Open(procRoot(m.Pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	v := &memberView{mounts: mounts, nsfd: nsfd, root: root}
	var err error
	switch {
	case !initAlive(m.Pid, m.StartTime):
		err, v = nil, nil
	case errMounts != nil:
		err = fmt.Errorf("read its mounts: %w", errMounts)
	case errNS != nil:
		err = fmt.Errorf("open its mount namespace: %w", errNS)
	case errRoot != nil:
		err = fmt.Errorf("open its root: %w", errRoot)
	}
	if err != nil || v == nil {
		if errNS == nil {
			unix.Close(nsfd)
		}
		if errRoot == nil {
			unix.Close(root)
		}
		return nil, err
	}
	return v, nil
}

// held reports whether container path q already has the mount verify
// checks for it (verifyFileGuards).
func held(mounts []*mountinfo.Info, q string, masked bool, pid int) bool {
	m := topMount(mounts, q)
	return m != nil && mountHas(m, "ro") && (!masked || m.FSType == "tmpfs" || !isDirIn(pid, q))
}

// handlesDenied reports whether the member's seccomp filter refuses
// open_by_handle_at: guardFiles adds a rule in zones with deny rules, and a
// profile may refuse it by its default action.
func handlesDenied(cfg *configs.Config) bool {
	s := cfg.Seccomp
	if s == nil {
		return false
	}
	passes := func(a configs.Action) bool {
		return a == configs.Allow || a == configs.Log || a == configs.Notify || a == configs.Trace
	}
	refused := !passes(s.DefaultAction)
	for _, sc := range s.Syscalls {
		if sc.Name != "open_by_handle_at" {
			continue
		}
		if passes(sc.Action) {
			return false // allowed, maybe only for some arguments
		}
		if len(sc.Args) == 0 {
			refused = true
		}
	}
	return refused
}

// mountInMember makes ops in the mount namespace nsfd, whose root root is
// (opened from the host through /proc). Each target is resolved in root
// before the namespace is entered; the sources from the host are detached
// mounts made here.
func mountInMember(nsfd, root int, mounts []*mountinfo.Info, ops []guardOp) error {
	type prepared struct {
		op     guardOp
		target int
		source int // detached mount from the host, -1 when made inside
	}
	var todo []prepared
	defer func() {
		for _, p := range todo {
			unix.Close(p.target)
			if p.source >= 0 {
				unix.Close(p.source)
			}
		}
	}()
	for _, op := range ops {
		fd, err := openIn(root, strings.TrimPrefix(path.Clean(op.path), "/"))
		if errors.Is(err, unix.ENOENT) && op.kind != guardNull && op.kind != guardMaskDir {
			continue // as at create: a missing read_only or writable path is skipped (Landlock kept it from being made)
		} else if err != nil {
			return fmt.Errorf("%s: %w", op.path, err)
		}
		todo = append(todo, prepared{op: op, target: fd, source: -1})
		if op.kind == guardInPlace || op.kind == guardNoexec {
			continue // changed where it is: nothing new to propagate
		}
		if err := notShared(fd, mounts, op.path); err != nil {
			return err
		}
		switch op.kind {
		case guardMaskDir:
			todo[len(todo)-1].source, err = emptyTmpfs()
		case guardNull:
			todo[len(todo)-1].source, err = nullDevice()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op.path, err)
		}
	}
	// One mount that fails does not keep the others from being made.
	return inMountNS(nsfd, func() error {
		var errs []error
		for _, p := range todo {
			if err := mountOne(p.op, p.target, p.source); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.op.path, err))
			}
		}
		return errors.Join(errs...)
	})
}

// mountOne makes one mount; it runs in the member's mount namespace.
func mountOne(op guardOp, target, source int) error {
	const onto = unix.MOVE_MOUNT_F_EMPTY_PATH | unix.MOVE_MOUNT_T_EMPTY_PATH
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	switch op.kind {
	case guardInPlace:
		err := unix.MountSetattr(target, "", unix.AT_EMPTY_PATH, ro)
		if errors.Is(err, unix.EBUSY) {
			return errors.New("make the mount read-only: a process of the container has a file open for writing on it")
		} else if err != nil {
			return fmt.Errorf("make the mount read-only: %w", err)
		}
		return nil
	case guardNoexec:
		// The other flags of the mount stay as they are.
		if err := unix.MountSetattr(target, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC}); err != nil {
			return fmt.Errorf("make the mount noexec: %w", err)
		}
		return nil
	case guardReadOnly, guardKeepWritable, guardNoexecCopy:
		// Copied in the namespace: a mount of another namespace cannot be.
		clone, err := unix.OpenTree(target, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return fmt.Errorf("copy the mount: %w", err)
		}
		defer unix.Close(clone)
		switch op.kind {
		case guardReadOnly:
			if err := unix.MountSetattr(clone, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, ro); err != nil {
				return fmt.Errorf("make the copy read-only: %w", err)
			}
		case guardNoexecCopy:
			if err := unix.MountSetattr(clone, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC}); err != nil {
				return fmt.Errorf("make the copy noexec: %w", err)
			}
		}
		source = clone
	}
	if err := unix.MoveMount(source, "", target, "", onto); err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	return nil
}

// notShared refuses a target whose mount is shared: a mount made on it
// would propagate to its peer group, outside the container (the host's
// mounts, with rootfsPropagation "shared").
func notShared(fd int, mounts []*mountinfo.Info, p string) error {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	for _, m := range mounts {
		if uint64(m.ID) == stx.Mnt_id {
			if strings.Contains(m.Optional, "shared:") {
				return fmt.Errorf("%s is on a shared mount (%s): a mount there would propagate out of the container (use rootfsPropagation private or slave)", p, m.Mountpoint)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: its mount (id %d) is not in the container's mount table", p, stx.Mnt_id)
}

// nullDevice is a detached read-only, nodev copy of the host's null device
// (denyMask), as create binds it.
func nullDevice() (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, denyMask, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("copy %s: %w", denyMask, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is not the null device", denyMask)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("make %s read-only and nodev: %w", denyMask, err)
	}
	return fd, nil
}

// emptyTmpfs is a detached empty read-only tmpfs, the mask of a denied
// directory (libcontainer's maskedPaths).
func emptyTmpfs() (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("tmpfs: %w", err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, fmt.Errorf("tmpfs: %w", err)
	}
	return fd, nil
}

// inMountNS runs f on a thread of its own in mount namespace nsfd. The
// thread leaves the process's shared file system context first (setns into
// a mount namespace needs it, and sets the thread's root and cwd to the
// namespace's root) and stays locked: no other goroutine ever runs on it,
// and it ends with this one.
func inMountNS(nsfd int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare the file system context: %w", err)
			return
		}
		if err := unix.Setns(nsfd, unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("enter the mount namespace: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}
