package landlock

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks matches the kernel's limit on nested symlinks (MAXSYMLINKS).
const maxSymlinks = 40

// errNotInRoot reports that a rule's path does not exist inside the rootfs.
var errNotInRoot = errors.New("does not exist in the rootfs")

// openChild opens one path component beneath dir without following a
// trailing symlink and without ever leaving dir: the rootfs belongs to the
// image, so anything in it (symlinks, "..", magic links) is untrusted.
func openChild(dir int, name string, flags uint64) (int, error) {
	return unix.Openat2(dir, name, &unix.OpenHow{
		Flags:   flags | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// resolveInRoot returns the symlink-free components of p as a process whose
// root is root would see them. Rules attach to inodes and the sibling
// technique needs every ancestor directory, so the canonical path matters,
// not just the final inode.
//
// The walk is done one component at a time (each open confined beneath its
// parent) and its result is then checked against the kernel's own
// RESOLVE_IN_ROOT resolution, so a rootfs changing underneath us or a
// resolver mistake yields an error rather than a rule on the wrong inode.
func resolveInRoot(root int, p string) ([]string, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("path %q is not absolute", p)
	}
	todo := splitPath(p)
	var comps []string
	dirs := []int{root} // dirs[i+1] is the open directory comps[i]
	defer func() {
		for _, fd := range dirs[1:] {
			unix.Close(fd)
		}
	}()
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(comps) > 0 {
				unix.Close(dirs[len(dirs)-1])
				dirs = dirs[:len(dirs)-1]
				comps = comps[:len(comps)-1]
			}
			continue
		}
		fd, err := openChild(dirs[len(dirs)-1], c, unix.O_PATH)
		if errors.Is(err, unix.ENOENT) {
			return nil, errNotInRoot
		}
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", "/"+path.Join(append(comps, c)...), err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("stat %q: %w", "/"+path.Join(append(comps, c)...), err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkFD(fd)
			unix.Close(fd)
			if err != nil {
				return nil, fmt.Errorf("readlink %q: %w", "/"+path.Join(append(comps, c)...), err)
			}
			if links++; links > maxSymlinks {
				return nil, fmt.Errorf("resolve %q: %w", p, unix.ELOOP)
			}
			if path.IsAbs(target) {
				for _, d := range dirs[1:] {
					unix.Close(d)
				}
				dirs, comps = dirs[:1], nil
			}
			todo = append(splitPath(target), todo...)
		case unix.S_IFDIR:
			dirs = append(dirs, fd)
			comps = append(comps, c)
		default:
			unix.Close(fd)
			if len(todo) > 0 {
				return nil, errNotInRoot // like ENOTDIR: a/file/b cannot exist
			}
			comps = append(comps, c)
		}
	}
	if err := sameAsKernel(root, p, comps); err != nil {
		return nil, err
	}
	return comps, nil
}

// sameAsKernel checks that the kernel resolves p inside root to the inode our
// walk found.
func sameAsKernel(root int, p string, comps []string) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	want, err := unix.Openat2(root, p, how)
	if err != nil {
		return fmt.Errorf("openat2(RESOLVE_IN_ROOT) %q: %w", p, err)
	}
	defer unix.Close(want)
	canon := "/" + strings.Join(comps, "/")
	how.Resolve |= unix.RESOLVE_NO_SYMLINKS
	got, err := unix.Openat2(root, canon, how)
	if err != nil {
		return fmt.Errorf("openat2 %q (resolved from %q): %w", canon, p, err)
	}
	defer unix.Close(got)
	var a, b unix.Stat_t
	if err := unix.Fstat(want, &a); err != nil {
		return err
	}
	if err := unix.Fstat(got, &b); err != nil {
		return err
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		return fmt.Errorf("resolving %q: the rootfs changed while it was read (got %q), retry", p, canon)
	}
	return nil
}

func readlinkFD(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// splitPath splits p into components, dropping empty ones and ".".
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
