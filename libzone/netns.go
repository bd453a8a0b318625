package libzone

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// ownNetns returns the network namespace of a new member (its init is pid)
// whose loopback belongs to the member alone, as /proc/PID/ns/net, or ""
// when it has none: the host's, or one joined by path (podman's
// /run/netns/..., another container's) that a process outside the member
// is in. A joined namespace counts as the member's own when, at create,
// no other process is in it: podman makes one for each container and
// holds it with a bind mount only. Its loopback is then not egress; a
// process entering that namespace later (ip netns exec, a second
// container given the same path) shares it, which only the host's root
// can arrange. Two containers sharing one namespace get no exemption,
// even in one zone: list the loopback in allowed_egress for them. Neither
// does a namespace when a process whose namespaces rauha may not inspect
// runs on the host (another user namespace's init).
func ownNetns(cfg *configs.Config, pid int) (string, error) {
	if !cfg.Namespaces.Contains(configs.NEWNET) {
		return "", nil
	}
	ns := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	if cfg.Namespaces.PathOf(configs.NEWNET) == "" {
		return ns, nil
	}
	var own unix.Stat_t
	if err := unix.Stat(ns, &own); err != nil {
		return "", fmt.Errorf("network namespace of the init: %w", err)
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return "", fmt.Errorf("list processes: %w", err)
	}
	self := strconv.Itoa(pid)
	for _, p := range procs {
		if p.Name() == self || p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		var st unix.Stat_t
		err := unix.Stat("/proc/"+p.Name()+"/ns/net", &st)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			continue // exited meanwhile
		}
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return "", nil // a process rauha cannot inspect may be in it
		}
		if err != nil {
			return "", fmt.Errorf("network namespace of pid %s: %w", p.Name(), err)
		}
		if st.Dev == own.Dev && st.Ino == own.Ino {
			return "", nil
		}
	}
	return ns, nil
}
