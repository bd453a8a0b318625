package libzone

// Landlock judges open, exec and the creation, removal and renaming of
// entries, and nothing else: chmod, chown, utimensat, setxattr and link act
// on an inode without opening it, open_by_handle_at reaches an inode
// without a path, an inode is reached under every name it has (a rule
// attaches to one), connect() to a unix socket is not an open, and a deny
// path that did not exist when a domain was built got no rule. On the
// fallback the mounts of the container close what Landlock leaves open,
// and seccomp the handles:
//
//   - a read_only path is bound onto itself read-only (libcontainer's
//     readonlyPaths, in the container's own view once its mounts are in
//     place), and every bind mount beneath it is made read-only: metadata
//     changes, truncation, creation and new hard links fail with EROFS for
//     every process, root included. A read_only "/" is a read-only root.
//   - a denied file is bound onto itself read-only: besides EROFS for
//     metadata, a new hard link to it fails with EXDEV (a link never
//     crosses mounts), and it cannot be renamed or removed (EBUSY). Landlock
//     still gives EACCES, with an event, on open.
//   - a denied directory is covered with an empty read-only tmpfs
//     (libcontainer's maskedPaths): nothing beneath it has a name any more,
//     unix sockets included (connect: ENOENT).
//   - a deny path that does not exist at create gets the null device bound
//     on it read-only and nodev (open: EACCES), its mount point and the
//     directories above it made first (in the rootfs, the bind source or
//     the container's own tmpfs): nothing can be created there later, by
//     the container or by the host through the bundle or a volume, and
//     Landlock has a path to deny. A rename or unlink on the host over the
//     mount point takes the mount away (verify reports it); Landlock still
//     denies what is put there, as an entry made later in a directory that
//     existed when the domain was built.
//   - other names of a denied inode already in the image (hard links) are
//     found at create and denied, in Landlock and by the mounts above.
//   - open_by_handle_at fails with EPERM in a zone with deny rules: a
//     handle names an inode, not a path.
//
// Only a process that can remount (CAP_SYS_ADMIN) could undo a mount; a
// zone that keeps it is told so by verify. On bpf-lsm the deny and
// read_only lists are inode lists judged by LSM hooks at open, metadata
// changes, links, renames and unix connects (any name, any handle;
// filedeny.go) and are not masked: a tmpfs over a denied directory would
// hide the inodes the deny list is resolved from.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// deniedLinksLabel is the container label (kept in libcontainer's state,
// so exec sees it) that lists the other names of denied inodes found at
// create, denied in every Landlock domain of the container, and those a
// zone update found while it ran, masked with the null device
// (fileguardupdate.go) and denied in the domains of later execs.
const deniedLinksLabel = "org.rauha.denied-links"

// deniedFilesLabel is the container label (in libcontainer's state) that
// lists the deny paths create holds with a read-only bind of themselves and
// the Landlock domain of the init: denied files, the other names of denied
// inodes, and deny paths on proc or sysfs. A zone update cannot tell such
// a bind from a read_only path's by the mounts; this says which it is.
// Without it (none, or a container of an older rauha) no bind is taken for
// a deny rule's: an update masks the file, verify asks for that.
const deniedFilesLabel = "org.rauha.denied-files"

// maxLinkScan bounds the directory entries read to find the other names of
// a denied inode that has more than one.
const maxLinkScan = 200000

// denyMask is bound, read-only and nodev, on deny paths that do not exist
// at create: a device node on a nodev mount cannot be opened (EACCES), and
// a read-only mount refuses every change (EROFS). The host's null device is
// used because it is there on every host and shows nothing of it.
const denyMask = "/dev/null"

// guardFiles adds to cfg the mounts that hold p's read_only and deny rules
// where Landlock has no right for it (see the top of this file).
func guardFiles(p *zone.Policy, cfg *configs.Config) error {
	fs := p.Filesystem
	if !heldByMounts(&fs) {
		return nil
	}
	root, err := unix.Open(cfg.Rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open rootfs %s: %w", cfg.Rootfs, err)
	}
	defer unix.Close(root)

	if fs.WritablePaths != nil {
		if err := readOnlyExceptWritable(root, cfg, *fs.WritablePaths); err != nil {
			return err
		}
	}

	for _, ro := range fs.ReadOnly {
		readOnlyMounts(cfg, ro)
	}
	if len(fs.Deny) > 0 {
		denySyscalls(cfg, []string{"open_by_handle_at"})
	}
	var links, bound []string
	for _, d := range fs.Deny {
		if d == "/" {
			continue // nothing would run; Landlock denies it all anyway
		}
		st, ok, err := statInContainer(root, cfg, d)
		if err != nil {
			return fmt.Errorf("filesystem.deny %s: %w", d, err)
		}
		if !ok {
			// Under a file system the container mounts itself: a
			// writable tmpfs starts empty (or a copy of the rootfs), so
			// the path is judged there.
			if st, ok, err = statInTmpfs(root, cfg, d); err != nil {
				return fmt.Errorf("filesystem.deny %s: %w", d, err)
			}
		}
		switch {
		case !ok:
			// proc, sysfs, a read-only tmpfs, the runtime's /dev: bound
			// read-only when it exists at start (readonlyPath skips what
			// does not).
			appendNew(&cfg.ReadonlyPaths, d)
			bound = append(bound, d)
		case st == nil:
			if err := maskMissing(root, cfg, d); err != nil {
				return fmt.Errorf("filesystem.deny %s: %w", d, err)
			}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			appendNew(&cfg.MaskPaths, d)
			readOnlyMounts(cfg, d)
		default:
			appendNew(&cfg.ReadonlyPaths, d)
			bound = append(bound, d)
		}
	}
	links, err = otherNames(root, cfg, fs.Deny)
	if err != nil {
		return err
	}
	for _, l := range links {
		appendNew(&cfg.ReadonlyPaths, l)
	}
	if bound = append(bound, links...); len(bound) > 0 {
		raw, _ := json.Marshal(bound)
		cfg.Labels = append(cfg.Labels, deniedFilesLabel+"="+string(raw))
	}
	if len(links) > 0 {
		raw, _ := json.Marshal(links)
		cfg.Labels = append(cfg.Labels, deniedLinksLabel+"="+string(raw))
	}
	return nil
}

// readOnlyExceptWritable makes everything outside the writable paths
// read-only at the mount level: the root is remounted read-only
// (libcontainer's readonly root, which leaves the mounts on it as they
// are), each writable path on the rootfs is first bound onto itself so that
// it stays writable, and bind mounts outside every writable path are
// read-only. Other mounts (tmpfs, proc, devpts) are the container's own and
// stay as configured; Landlock still refuses writes there.
func readOnlyExceptWritable(root int, cfg *configs.Config, writable []string) error {
	if slices.Contains(writable, "/") {
		return nil
	}
	binds, err := writableBinds(root, cfg, writable)
	if err != nil {
		return err
	}
	for _, m := range cfg.Mounts {
		if m.IsBind() && !underWritable(m.Destination, writable) {
			m.Flags |= unix.MS_RDONLY
		}
	}
	// Before every other mount: one beneath a writable path lands on top.
	cfg.Mounts = append(binds, cfg.Mounts...)
	cfg.Readonlyfs = true
	return nil
}

// writableBinds are the binds onto themselves of the writable paths that
// are on the rootfs and exist, which keep them writable under a read-only
// root.
func writableBinds(root int, cfg *configs.Config, writable []string) ([]*configs.Mount, error) {
	var binds []*configs.Mount
	for _, w := range outermost(writable) {
		if slices.ContainsFunc(cfg.Mounts, func(m *configs.Mount) bool { return within(w, m.Destination) }) {
			continue // a mount of its own decides
		}
		fd, err := openIn(root, strings.TrimPrefix(path.Clean(w), "/"))
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue // Landlock keeps it from being created
		} else if err != nil {
			return nil, fmt.Errorf("filesystem.writable_paths %s: %w", w, err)
		}
		src, err := fdPath(fd)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("filesystem.writable_paths %s: %w", w, err)
		}
		binds = append(binds, &configs.Mount{
			Source:      src,
			Destination: w,
			Device:      "bind",
			Flags:       unix.MS_BIND | unix.MS_REC,
		})
	}
	return binds, nil
}

// underWritable reports whether container path p is, or is below, one of
// the writable paths.
// outermost are the paths of list that no other path of it is above: the
// copy of a writable directory holds the writable paths below it, and a
// zone update, which opens every target before it mounts any, would hide
// a copy made below another under that one's copy.
func outermost(list []string) []string {
	var out []string
	for _, p := range list {
		if !slices.ContainsFunc(list, func(q string) bool { return path.Clean(q) != path.Clean(p) && within(p, q) }) {
			out = append(out, p)
		}
	}
	return out
}

func underWritable(p string, writable []string) bool {
	return slices.ContainsFunc(writable, func(w string) bool { return within(p, w) })
}

// readOnlyMounts makes p read-only in the container: "/" is the root,
// anything else a read-only bind of itself; bind mounts beneath p are made
// read-only too (the recursive bind copies them as they are).
func readOnlyMounts(cfg *configs.Config, p string) {
	if p == "/" {
		cfg.Readonlyfs = true
	} else {
		appendNew(&cfg.ReadonlyPaths, p)
	}
	for _, m := range cfg.Mounts {
		if m.IsBind() && within(m.Destination, p) {
			m.Flags |= unix.MS_RDONLY
		}
	}
}

// within reports whether q is p or beneath it, compared as clean paths.
// heldByMounts reports whether the fallback holds some of fs's rules with
// mounts of the containers (read_only, deny, writable_paths): at create
// (guardFiles) and in running members at a zone update (guardRunning).
func heldByMounts(fs *zone.Filesystem) bool {
	return fs.WritablePaths != nil || len(fs.ReadOnly)+len(fs.Deny) > 0
}

func within(q, p string) bool {
	q, p = path.Clean(q), path.Clean(p)
	return q == p || p == "/" || strings.HasPrefix(q, p+"/")
}

func appendNew(list *[]string, p string) {
	if !slices.Contains(*list, p) {
		*list = append(*list, p)
	}
}

// hostBase is where container path p starts on the host: the source of the
// last bind mount at or above it, else the rootfs (root). ok is false when
// a mount of another kind (tmpfs, proc) covers p.
func hostBase(root int, cfg *configs.Config, p string) (base int, rel string, ok bool, err error) {
	if m := coveringMount(cfg, p); m != nil {
		if !m.IsBind() {
			return -1, "", false, nil
		}
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, "", false, nil // libcontainer reports a bad source
		}
		r, _ := filepath.Rel(path.Clean(m.Destination), path.Clean(p))
		return fd, r, true, nil
	}
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, "", false, err
	}
	return fd, strings.TrimPrefix(path.Clean(p), "/"), true, nil
}

// openIn opens rel beneath base as the container would resolve it ("."
// is base itself, which may be a file: a bind mount of one).
func openIn(base int, rel string) (int, error) {
	if rel == "" || rel == "." {
		return unix.Dup(base)
	}
	return unix.Openat2(base, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// statInContainer stats container path p on the host, resolved the way the
// container will see it (symlinks stay inside the rootfs or the bind
// source). st is nil when p does not exist; ok is false when p lies on a
// file system the container mounts itself.
func statInContainer(root int, cfg *configs.Config, p string) (st *unix.Stat_t, ok bool, err error) {
	base, rel, ok, err := hostBase(root, cfg, p)
	if err != nil || !ok {
		return nil, ok, err
	}
	defer unix.Close(base)
	st, err = statIn(base, rel)
	return st, true, err
}

// coveringMount is the last mount of cfg at or above container path p (the
// one the container sees p on), nil for the rootfs.
func coveringMount(cfg *configs.Config, p string) *configs.Mount {
	for _, m := range slices.Backward(cfg.Mounts) {
		if within(p, m.Destination) {
			return m
		}
	}
	return nil
}

// statInTmpfs stats container path p on the writable tmpfs the container
// mounts over it: an empty file system, so p does not exist, unless the
// tmpfs is a copy of the rootfs (tmpcopyup), where p is what the rootfs
// holds; p the tmpfs's own mount point is a directory. ok is false for
// every other mount: proc, sysfs, a read-only tmpfs (nothing can be
// created there), and the tmpfs on /dev, which the runtime fills with
// device nodes after the mounts.
func statInTmpfs(root int, cfg *configs.Config, p string) (st *unix.Stat_t, ok bool, err error) {
	m := coveringMount(cfg, p)
	if m == nil || m.Device != "tmpfs" || m.Flags&unix.MS_RDONLY != 0 || path.Clean(m.Destination) == "/dev" {
		return nil, false, nil
	}
	if path.Clean(p) == path.Clean(m.Destination) {
		return &unix.Stat_t{Mode: unix.S_IFDIR}, true, nil // the tmpfs itself
	}
	if m.Extensions&configs.EXT_COPYUP == 0 {
		return nil, true, nil
	}
	st, err = statIn(root, strings.TrimPrefix(path.Clean(p), "/"))
	return st, true, err
}

// statIn stats rel resolved inside base as openIn resolves it; nil when it
// does not exist.
func statIn(base int, rel string) (*unix.Stat_t, error) {
	fd, err := openIn(base, rel)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("resolve in the container root: %w", err)
	}
	defer unix.Close(fd)
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// maskMissing binds the read-only null device on deny path p, which does
// not exist at create: nothing can be created at p afterwards, and Landlock
// then has an inode at p to deny and directories above it that lose the
// rights p must not have (an entry made in them later gets none of them).
// Its mount point, and every missing directory above it, is made now in
// the rootfs or the bind source that holds p, resolved inside it as
// libcontainer resolves mount points (pathrs: a symlink cannot lead out),
// with libcontainer's modes (0755 directories, an empty 0644 file); they
// stay after the container is deleted, like libcontainer's mount points.
// Made here rather than by libcontainer in the container's view because a
// bind mounted read-only (a ":ro" volume, or every bind outside
// writable_paths) refuses new mount points there. On a tmpfs the container
// mounts itself libcontainer makes them, in that tmpfs. A rootfs or bind
// source on a read-only file system is left alone (nothing can be created
// there without remounting it): verify reports the path as not masked.
func maskMissing(root int, cfg *configs.Config, p string) error {
	var st unix.Stat_t
	if err := unix.Stat(denyMask, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		return fmt.Errorf("%s is not the null device: cannot mask %s", denyMask, p)
	}
	base, rel, ok, err := hostBase(root, cfg, p)
	if err != nil {
		return err
	}
	if ok {
		where := cfg.Rootfs
		if m := coveringMount(cfg, p); m != nil {
			where = m.Source
		}
		err = makeMountpoint(base, where, rel, cfg)
		unix.Close(base)
		if errors.Is(err, unix.EROFS) {
			return nil
		} else if err != nil {
			return fmt.Errorf("cannot make the mount point that denies it in %s (a symlink to nothing or a file on the way?): %w", where, err)
		}
	}
	cfg.Mounts = append(cfg.Mounts, &configs.Mount{
		Source:      denyMask,
		Destination: p,
		Device:      "bind",
		Flags:       unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC,
	})
	return nil
}

// makeMountpoint makes rel, an empty file, beneath the directory base
// (named name in errors), with the directories above it that are missing.
// What it makes belongs to the container's root, as if libcontainer had
// made it inside a user namespace. A file already there (made meanwhile)
// is used as it is; anything else at rel is an error.
func makeMountpoint(base int, name, rel string, cfg *configs.Config) error {
	uid, err := cfg.HostRootUID()
	if err != nil {
		return err
	}
	gid, err := cfg.HostRootGID()
	if err != nil {
		return err
	}
	dir, file := path.Split(path.Clean(rel))
	// The directories made below are those from the first one missing.
	var made []string
	for d := path.Clean(dir); d != "." && d != "/"; d = path.Dir(d) {
		fd, err := openIn(base, d)
		if err == nil {
			unix.Close(fd)
			break
		}
		made = append(made, d)
	}
	dup, err := unix.Dup(base)
	if err != nil {
		return err
	}
	b := os.NewFile(uintptr(dup), name)
	defer b.Close()
	d, err := pathrs.MkdirAllHandle(b, dir, 0o755)
	if err != nil {
		return err
	}
	defer d.Close()
	// mknod, not open: an open would block on a FIFO put there meanwhile.
	err = unix.Mknodat(int(d.Fd()), file, unix.S_IFREG|0o644, 0)
	if err == nil {
		made = append(made, path.Join(dir, file))
	} else if !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create %s: %w", rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), file, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file: it changed while the container was created, retry", rel)
	}
	if uid == os.Geteuid() && gid == os.Getegid() {
		return nil
	}
	for _, m := range made {
		fd, err := openIn(base, m)
		if err != nil {
			return fmt.Errorf("open %s: %w", m, err)
		}
		err = unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("chown %s to the container's root: %w", m, err)
		}
	}
	return nil
}

type inodeID struct{ dev, ino uint64 }

// otherNames finds, in the rootfs and the container's bind mounts, the
// names of denied inodes that are not beneath a deny path: hard links made
// before the container started. Only inodes with more than one link are
// looked for, so an image without such links costs a stat per deny path
// (and a walk of each denied directory).
func otherNames(root int, cfg *configs.Config, deny []string) ([]string, error) {
	want := map[inodeID]bool{}
	budget := maxLinkScan
	for _, d := range deny {
		base, rel, ok, err := hostBase(root, cfg, d)
		if err != nil {
			return nil, fmt.Errorf("filesystem.deny %s: %w", d, err)
		}
		if !ok {
			continue
		}
		fd, err := openIn(base, rel)
		unix.Close(base)
		if err != nil {
			continue // does not exist: no inode to have other names
		}
		err = walkInodes(fd, &budget, func(st *unix.Stat_t, _ string) {
			if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
				want[inodeID{st.Dev, st.Ino}] = true
			}
		})
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("filesystem.deny %s: %w", d, err)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	// Every tree the container sees: the rootfs and each bind mount.
	bases := []struct{ src, dest string }{{"", "/"}}
	for _, m := range cfg.Mounts {
		if m.IsBind() {
			bases = append(bases, struct{ src, dest string }{m.Source, path.Clean(m.Destination)})
		}
	}
	var out []string
	for _, b := range bases {
		fd := root
		if b.src != "" {
			var err error
			if fd, err = unix.Open(b.src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				continue // a file bind, or missing: libcontainer reports that
			}
		}
		err := walkInodes(fd, &budget, func(st *unix.Stat_t, rel string) {
			if !want[inodeID{st.Dev, st.Ino}] {
				return
			}
			p := path.Join(b.dest, rel)
			if slices.ContainsFunc(deny, func(d string) bool { return within(p, d) }) {
				return
			}
			if hiddenByMount(cfg, b.dest, p) {
				return // the container sees another file there
			}
			appendNew(&out, p)
		})
		if fd != root {
			unix.Close(fd)
		}
		if err != nil {
			return nil, fmt.Errorf("look for other names of denied files: %w", err)
		}
	}
	slices.Sort(out)
	return out, nil
}

// hiddenByMount reports whether container path p, found beneath the mount
// at dest, is covered by a later mount of another tree.
func hiddenByMount(cfg *configs.Config, dest, p string) bool {
	for _, m := range cfg.Mounts {
		if d := path.Clean(m.Destination); d != dest && within(d, dest) && within(p, d) {
			return true
		}
	}
	return false
}

// walkInodes calls f for fd and every entry beneath it (symlinks as
// themselves), on fd's device only, reading at most *budget entries.
func walkInodes(fd int, budget *int, f func(st *unix.Stat_t, rel string)) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	f(&st, "")
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return walkDir(fd, st.Dev, "", budget, f)
}

func walkDir(dir int, dev uint64, rel string, budget *int, f func(st *unix.Stat_t, rel string)) error {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", "/"+rel, err)
	}
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", "/"+rel, err)
	}
	for _, name := range names {
		if *budget--; *budget < 0 {
			return fmt.Errorf("more than %d entries to read: deny smaller trees or remove the hard links", maxLinkScan)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed since it was listed
		}
		if st.Dev != dev {
			continue // another file system: no hard link crosses into it
		}
		sub := path.Join(rel, name)
		f(&st, sub)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		err = walkDir(cfd, dev, sub, budget, f)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// deniedLinks are the other names of denied inodes recorded at create and
// by zone updates.
func deniedLinks(cfg *configs.Config) []string {
	if cfg == nil {
		return nil
	}
	return deniedLinksIn(cfg.Labels)
}

// deniedLinksIn reads deniedLinksLabel from a container's labels.
func deniedLinksIn(labels []string) []string { return labelList(labels, deniedLinksLabel) }

// labelList reads the JSON list in label name of a container's labels.
func labelList(labels []string, name string) []string {
	for _, l := range labels {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			var out []string
			if json.Unmarshal([]byte(v), &out) == nil {
				return out
			}
		}
	}
	return nil
}

// fileGuardRoutes lists what lets a member undo the mounts that hold its
// read_only and deny rules on the fallback: CAP_SYS_ADMIN can remount them
// read-write or unmount them.
func fileGuardRoutes(cfg *configs.Config, p *zone.Policy) []string {
	fs := p.Filesystem
	if fs.WritablePaths == nil && len(fs.ReadOnly)+len(fs.Deny) == 0 || !keepsCap(cfg, p, "CAP_SYS_ADMIN") {
		return nil
	}
	return []string{"filesystem: CAP_SYS_ADMIN can unmount or remount the read-only mounts that hold the filesystem rules against metadata changes (drop the capability)"}
}

// topMount is the topmost mount at p, the last one mounted there, or nil.
func topMount(mounts []*mountinfo.Info, p string) *mountinfo.Info {
	for _, m := range slices.Backward(mounts) {
		if m.Mountpoint == p {
			return m
		}
	}
	return nil
}

// isDirIn reports whether p is a directory inside pid's root.
func isDirIn(pid int, p string) bool {
	st := statInPid(pid, p)
	return st != nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// unmaskedFileIn reports whether p inside pid's root is a file other than
// the null device (the mask of a deny path).
func unmaskedFileIn(pid int, p string) bool {
	st := statInPid(pid, p)
	if st == nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return false
	}
	return st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3)
}

// statInPid stats p inside pid's root; nil when it cannot.
func statInPid(pid int, p string) *unix.Stat_t {
	root, err := unix.Open(procRoot(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil
	}
	return &st
}

// verifyFileGuards adds the checks of the mounts that hold the member's
// read_only and deny rules (fileguard.go) to r.
func verifyFileGuards(name string, pid int, cfg *configs.Config, p *zone.Policy, r *zone.IsolationReport) {
	fs := p.Filesystem
	if fs.WritablePaths == nil && len(fs.ReadOnly)+len(fs.Deny) == 0 {
		return
	}
	mounts, err := mountsOf(pid)
	if err != nil {
		r.Add(name+": read-only paths", false, "read the mounts of pid %d: %v", pid, err)
		return
	}
	routes := fileGuardRoutes(cfg, p)
	readOnly := fs.ReadOnly
	if w := fs.WritablePaths; w != nil && !slices.Contains(*w, "/") {
		readOnly = append([]string{"/"}, readOnly...) // everything not writable
	}
	// masked: a denied directory must be covered by the empty tmpfs (a
	// read-only mount alone leaves its names, and sockets, reachable), and
	// a denied file by the null device unless create bound it for its deny
	// rule (deniedFilesLabel): a read_only rule's bind refuses writes only.
	bound := labelList(cfg.Labels, deniedFilesLabel)
	check := func(label string, paths []string, masked bool, routes []string) {
		if len(paths) == 0 {
			return
		}
		var bad []string
		for _, q := range paths {
			m := topMount(mounts, q)
			switch {
			case m == nil:
				bad = append(bad, q+": no mount (removed, e.g. by a rename or unlink over it on the host; a symlink: name its target; or missing at create on proc, sysfs, /dev, a read-only tmpfs or a read-only host file system)")
			case !mountHas(m, "ro"):
				bad = append(bad, q+": the mount on it is read-write")
			case masked && m.FSType != "tmpfs" && isDirIn(pid, q):
				bad = append(bad, q+": the directory is not masked (its names are reachable)")
			case masked && !slices.Contains(bound, q) && unmaskedFileIn(pid, q):
				bad = append(bad, q+": only a read-only mount holds it, which refuses writes, not reads (made for a read_only rule; run the zone update again or 'rauha zone reconcile')")
			}
		}
		bad = append(bad, routes...)
		if len(bad) > 0 {
			r.Add(name+": "+label, false, "%s", strings.Join(bad, "; "))
		} else {
			r.Add(name+": "+label, true, "read-only mounts on %s", strings.Join(paths, ", "))
		}
	}
	check("read-only paths", readOnly, false, routes)
	var deny []string
	for _, d := range fs.Deny {
		if d != "/" {
			deny = append(deny, d)
		}
	}
	if len(deny) > 0 && !handlesDenied(cfg) && keepsCap(cfg, p, "CAP_DAC_READ_SEARCH") {
		// A member created before the zone had deny rules (a zone
		// update cannot add a seccomp rule to running processes).
		routes = append(slices.Clone(routes), "open_by_handle_at is not denied and the member holds CAP_DAC_READ_SEARCH: a file handle reaches a denied inode past every mount (recreate the container)")
	}
	check("denied paths", append(deny, deniedLinks(cfg)...), true, routes)
}
