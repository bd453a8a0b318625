package libzone

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// The paths of an error the fallback's mounts give (KernelEvent.RulePaths)
// are what the task passed, made absolute by the observer against its
// working directory or directory fd: a symlink or a ".." after one in them
// names another file than the words say (/lnk/a for /srv/ro/a, /tmp/d/../b
// for /srv/ro/b when /tmp/d is a symlink to /srv/ro/sub), and only the
// kernel's lookup says which mount the task hit. The observer cannot look
// names up at sys_exit, and there is no daemon: events are drained by the
// next command that shows events or verifies, when the task is usually
// gone. The engine resolves them then, in the root of a process of the
// member that still runs (its init, in the same mount namespace), as the
// kernel did; for a stopped member in its root file system; for a deleted
// one by their words.

// ruleMembers find what judges the mount errors of a member, by cgroup
// id, once per drain (ruleMember).
type ruleMembers struct {
	containers map[uint64]*zone.Container
	// state is a container's state (libcontainer's), nil when it has none
	// any more.
	state func(id string) *stateFile
	found map[uint64]ruleMember
}

// ruleMember is what judges a member's mount errors besides its zone's
// rules: the roots its paths resolve in, the first that can be opened, and
// the other names of denied inodes found at its create (deniedLinksLabel),
// which its mounts hold as they hold the deny paths. The roots are that of
// a process of the member that still runs ("/proc/PID/root"; a process
// that just ended, a zombie, has none any more), then its root file system
// on the host (the image's symlinks, without what was mounted on it).
type ruleMember struct {
	roots []string
	links []string
}

func (m *ruleMembers) member(cgid uint64) ruleMember {
	if r, ok := m.found[cgid]; ok {
		return r
	}
	var r ruleMember
	if c := m.containers[cgid]; c != nil {
		var sf *stateFile
		if m.state != nil {
			sf = m.state(c.ID)
		}
		if pid := memberPid(c); pid > 0 {
			r.roots = append(r.roots, procRoot(pid))
		}
		if sf != nil {
			r.links = deniedLinksIn(sf.Config.Labels)
			if sf.Config.Rootfs != "" {
				r.roots = append(r.roots, sf.Config.Rootfs)
			}
		}
	}
	if m.found == nil {
		m.found = map[uint64]ruleMember{}
	}
	m.found[cgid] = r
	return r
}

// ruledPath is the first of paths that is, or is below, a deny or
// read_only path of z's policy or one of m's other names of denied inodes,
// or "". Each path is first resolved in m's roots (kernelPath; followLast:
// the last name too, as connect(2) follows it); a path that resolves in
// none of them is judged as it is written.
func ruledPath(z *zone.Zone, paths []string, m ruleMember, followLast bool) string {
	fs := &z.Policy.Filesystem
	for _, p := range paths {
		if !path.IsAbs(p) {
			continue // not resolved: cannot be told
		}
		for _, root := range m.roots {
			if r, ok := kernelPath(root, p, followLast); ok {
				p = r
				break
			}
		}
		for _, r := range [][]string{fs.Deny, fs.ReadOnly, m.links} {
			if slices.ContainsFunc(r, func(rule string) bool { return within(p, rule) }) {
				return path.Clean(p)
			}
		}
	}
	return ""
}

// kernelPath is absolute path p as the kernel resolves it in root (a
// directory, "/proc/PID/root"): symlinks followed inside root, ".." after
// them taken from where they led. The last name is kept as it is unless
// followLast (rename, unlink, rmdir and link act on the name itself). A
// directory that does not exist ends the lookup (the task got ENOENT
// there): what follows it is joined by its words, or only its first name
// when ".." follows. ok is false when root cannot be opened or the path
// named in its terms.
func kernelPath(root, p string, followLast bool) (string, bool) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(rfd)
	rootName, err := fdPath(rfd)
	if err != nil {
		return "", false
	}
	p = strings.TrimRight(p, "/")
	dir, last := p, ""
	if i := strings.LastIndexByte(p, '/'); !followLast && i >= 0 && p[i+1:] != "." && p[i+1:] != ".." {
		dir, last = p[:i], p[i+1:]
	}
	var rest []string
	for {
		fd, err := unix.Openat2(rfd, "/"+dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == nil {
			name, err := fdPath(fd)
			unix.Close(fd)
			rel, ok := below(name, rootName)
			if err != nil || !ok {
				return "", false
			}
			if slices.Contains(rest, "..") {
				// The lookup ended at the first missing name.
				return path.Join(rel, rest[len(rest)-1]), true
			}
			slices.Reverse(rest)
			return path.Join(append([]string{rel}, append(rest, last)...)...), true
		}
		i := strings.LastIndexByte(dir, '/')
		if err != unix.ENOENT || i < 0 {
			return "", false
		}
		rest = append(rest, dir[i+1:])
		dir = dir[:i]
	}
}

// fdPath is the path of the file at fd as the kernel names it: from our
// root when the file is reachable from it, else from the root of the
// mount namespace it is in (a member's root, after pivot_root). A root and
// a file below it are named the same way, so below strips one from the
// other.
func fdPath(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// below is name relative to root, "/"-rooted, when it is root or below it.
func below(name, root string) (string, bool) {
	if !within(name, root) {
		return "", false
	}
	if root == "/" {
		return name, true
	}
	return "/" + strings.TrimPrefix(name[len(root):], "/"), true
}
