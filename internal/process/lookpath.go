package process

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// LookPathIn checks that p's executable exists in the container whose root
// is root, the way libcontainer's init looks it up before it execs. When a
// zone wraps the process in its exec shim, the shim does the PATH search,
// so without this check a missing command would surface only as exit 127
// after start; clients (docker, podman) expect create to fail with runc's
// message instead.
func LookPathIn(root string, p *libcontainer.Process) error {
	if len(p.Args) == 0 {
		return errors.New("the process has no args")
	}
	name := p.Args[0]
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open container root %s: %w", root, err)
	}
	defer unix.Close(rootFD)
	if strings.Contains(name, "/") {
		if !path.IsAbs(name) {
			name = path.Join(p.Cwd, name)
		}
		if err := executableIn(rootFD, name); err != nil {
			return fmt.Errorf("unable to start container process: exec: %q: %w", p.Args[0], err)
		}
		return nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range p.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		if !path.IsAbs(dir) {
			dir = path.Join(p.Cwd, dir)
		}
		if executableIn(rootFD, path.Join(dir, name)) == nil {
			return nil
		}
	}
	return fmt.Errorf("unable to start container process: exec: %q: executable file not found in $PATH", name)
}

// executableIn reports whether file (absolute, inside root) is a regular
// file with an execute bit, resolving symlinks without leaving root.
func executableIn(rootFD int, file string) error {
	fd, err := unix.Openat2(rootFD, strings.TrimPrefix(file, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("stat %s: %w", file, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", file, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", file)
	}
	if st.Mode&0o111 == 0 {
		return fmt.Errorf("%s: permission denied", file)
	}
	return nil
}
