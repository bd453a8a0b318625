package libzone

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// Escape routes: what in a member's configuration would let its tasks undo
// their zone from inside. Two kinds:
//
//   - a way out of the member's cgroup (cgroupEscapeRoutes). Zone membership,
//     the egress programs and the limits are bound to the cgroup; a task that
//     moves itself elsewhere leaves them behind. The bpf-lsm backend's guard
//     (lsm/file_open) refuses a write of cgroup.procs outside the zone under
//     every name and handle; the Landlock fallback has no hook for it, so
//     there the member must not be handed a route.
//   - a way to the enforcement itself (enforcementRoutes): rauha's pinned
//     maps, whose policy entries say what the zone may do, and its state
//     root. These count on every backend: a member that can rewrite its own
//     policy has no zone.
//
// closeEscapeRoutes first closes what can be closed without changing what
// an ordinary workload sees; the rest is refused by strict admission and
// named by verify.

// hostMounts reads the host's mount table once, and only when a recursive
// bind needs it (ordinary bundles have none).
type hostMounts struct {
	read   bool
	mounts []*mountinfo.Info
	err    error
}

// below lists the mounts strictly under dir whose filesystem is one of types.
func (h *hostMounts) below(dir string, types ...string) ([]string, error) {
	if !h.read {
		h.mounts, h.err = mountinfo.GetMounts(nil)
		h.read = true
	}
	if h.err != nil {
		return nil, fmt.Errorf("read the mount table: %w", h.err)
	}
	var found []string
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for _, m := range h.mounts {
		if strings.HasPrefix(m.Mountpoint, prefix) && slices.Contains(types, m.FSType) {
			found = append(found, m.Mountpoint)
		}
	}
	return found, nil
}

// bindSource is a bind mount of the configuration with its source resolved.
type bindSource struct {
	m      *configs.Mount
	src    string // symlinks resolved
	fsType int64  // statfs magic of src
}

// recursive reports whether the bind carries the mounts below its source.
func (b bindSource) recursive() bool { return b.m.Flags&unix.MS_REC != 0 }

// topReadOnly: the bind's own mount is read-only.
func (b bindSource) topReadOnly() bool { return b.m.Flags&unix.MS_RDONLY != 0 || b.recReadOnly() }

// recReadOnly: every mount of the bind's tree is read-only (mount_setattr
// with AT_RECURSIVE, OCI's "rro"). A plain "ro" on a recursive bind leaves
// the mounts below it as writable as they are on the host.
func (b bindSource) recReadOnly() bool {
	return b.m.RecAttr != nil && b.m.RecAttr.Attr_set&unix.MOUNT_ATTR_RDONLY != 0
}

// binds lists the configuration's bind mounts whose source exists; a missing
// source fails libcontainer's mount itself.
func binds(cfg *configs.Config) []bindSource {
	var out []bindSource
	for _, m := range cfg.Mounts {
		if !m.IsBind() {
			continue
		}
		src, err := filepath.EvalSymlinks(m.Source)
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(src, &st) != nil {
			continue
		}
		out = append(out, bindSource{m: m, src: src, fsType: st.Type})
	}
	return out
}

func isCgroupFS(t int64) bool { return t == unix.CGROUP_SUPER_MAGIC || t == unix.CGROUP2_SUPER_MAGIC }

var cgroupFSTypes = []string{"cgroup", "cgroup2"}

// keepsCap reports whether the member's init may hold capability c: the
// configuration's bounding set has it and the policy does not take it away.
func keepsCap(cfg *configs.Config, p *zone.Policy, c string) bool {
	if cfg.Capabilities == nil || !slices.Contains(cfg.Capabilities.Bounding, c) {
		return false
	}
	if a := p.Capabilities.Allowed; a != nil {
		return slices.ContainsFunc(*a, func(name string) bool {
			n, err := zone.CapabilityName(name)
			return err == nil && n == c
		})
	}
	return true
}

// privateNS: the member gets a namespace of type t of its own.
func privateNS(cfg *configs.Config, t configs.NamespaceType) bool {
	return cfg.Namespaces.Contains(t) && cfg.Namespaces.PathOf(t) == ""
}

// handleRoute: a member with CAP_SYS_ADMIN in a cgroup namespace mounts
// cgroup2 there (it shows only its own subtree), and with
// CAP_DAC_READ_SEARCH open_by_handle_at on that mount reaches any cgroup
// directory by its id, outside the namespace root: without nsdelegate the
// kernel then lets it write cgroup.procs there.
func handleRoute(cfg *configs.Config, p *zone.Policy) bool {
	return keepsCap(cfg, p, "CAP_SYS_ADMIN") && keepsCap(cfg, p, "CAP_DAC_READ_SEARCH") &&
		privateNS(cfg, configs.NEWCGROUP) && !seccompDenies(cfg.Seccomp, "open_by_handle_at")
}

// seccompDenies reports whether profile s makes every call of syscall name
// fail.
func seccompDenies(s *configs.Seccomp, name string) bool {
	if s == nil {
		return false
	}
	refuses := func(a configs.Action) bool {
		switch a {
		case configs.Errno, configs.Kill, configs.KillThread, configs.KillProcess, configs.Trap:
			return true
		}
		return false
	}
	ruled := false
	for _, sc := range s.Syscalls {
		if sc.Name != name {
			continue
		}
		if len(sc.Args) == 0 && refuses(sc.Action) {
			return true
		}
		ruled = true
	}
	return !ruled && refuses(s.DefaultAction)
}

// closeEscapeRoutes closes the routes that can be closed in the member's
// configuration without taking from the workload what it asked for:
//   - a read-only recursive bind over cgroup hierarchies becomes read-only
//     all the way down (mount_setattr AT_RECURSIVE), which is what "ro"
//     reads as; otherwise the cgroup mounts below it stay writable;
//   - on the fallback, open_by_handle_at fails with EPERM for a member that
//     could use it to reach a cgroup outside its namespace (handleRoute).
//     Docker's default profile allows that call only with
//     CAP_DAC_READ_SEARCH, so this takes it from the few images that keep
//     both capabilities; refusing them would take the whole container.
func closeEscapeRoutes(cfg *configs.Config, p *zone.Policy, guarded bool, h *hostMounts) error {
	for _, b := range binds(cfg) {
		if !b.recursive() || b.m.Flags&unix.MS_RDONLY == 0 || b.recReadOnly() {
			continue
		}
		below, err := h.below(b.src, cgroupFSTypes...)
		if err != nil {
			return err
		}
		if len(below) == 0 {
			continue
		}
		if b.m.RecAttr == nil {
			b.m.RecAttr = &unix.MountAttr{}
		}
		b.m.RecAttr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		b.m.RecAttr.Attr_clr &^= unix.MOUNT_ATTR_RDONLY
	}
	if !guarded && handleRoute(cfg, p) {
		denySyscalls(cfg, []string{"open_by_handle_at"})
	}
	return nil
}

// cgroupEscapeRoutes lists what in a member's configuration would let its
// tasks write cgroup.procs (or a v1 tasks file) outside their own cgroup,
// for the fallback, which has no hook to stop that write:
//   - a writable bind mount of a cgroup hierarchy, or a recursive bind whose
//     tree holds one and is not read-only all the way down (libcontainer's
//     own "cgroup" mounts show only the container's subtree and are not
//     counted);
//   - CAP_SYS_ADMIN, kept by the policy, without a private cgroup namespace:
//     it can mount the whole hierarchy itself;
//   - CAP_SYS_ADMIN with a bind of a cgroup hierarchy, read-only or not, and
//     no user namespace: it can remount the bind read-write;
//   - CAP_SYS_ADMIN in a shared pid namespace: setns into the cgroup
//     namespace of a process outside the member, through /proc/PID/ns;
//   - CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH in a cgroup namespace with
//     open_by_handle_at allowed (handleRoute).
//
// Leaving a cgroup escapes the cgroup-bound controls (egress programs, device
// rules, limits); the Landlock domain and seccomp filter stay with the task.
func cgroupEscapeRoutes(cfg *configs.Config, p *zone.Policy, h *hostMounts) ([]string, error) {
	var routes []string
	exposed := false // some bind shows a cgroup hierarchy of the host
	for _, b := range binds(cfg) {
		d, s := b.m.Destination, b.m.Source
		if isCgroupFS(b.fsType) {
			exposed = true
			if !b.topReadOnly() {
				routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a writable mount of the cgroup hierarchy %s (mount it read-only)", d, s))
			}
			continue
		}
		if !b.recursive() {
			continue
		}
		below, err := h.below(b.src, cgroupFSTypes...)
		if err != nil {
			return nil, err
		}
		if len(below) == 0 {
			continue
		}
		exposed = true
		switch {
		case !b.topReadOnly():
			routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a writable recursive bind of %s, which holds the cgroup hierarchy %s (mount it read-only)", d, s, below[0]))
		case !b.recReadOnly():
			routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a recursive bind of %s that is read-only only at its top: the cgroup hierarchy %s below it stays writable (use \"rro\")", d, s, below[0]))
		}
	}
	if !keepsCap(cfg, p, "CAP_SYS_ADMIN") {
		return routes, nil
	}
	switch {
	case !privateNS(cfg, configs.NEWCGROUP):
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN without a cgroup namespace of its own can mount the whole cgroup hierarchy (add a cgroup namespace or drop the capability)")
	case !privateNS(cfg, configs.NEWPID):
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN in a shared pid namespace can enter another process's cgroup namespace through /proc/PID/ns/cgroup and mount the cgroups outside its own (add a pid namespace or drop the capability)")
	case handleRoute(cfg, p):
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN with CAP_DAC_READ_SEARCH can mount cgroup2 and open a cgroup outside its namespace by handle (open_by_handle_at) (drop either capability)")
	}
	if exposed && !privateNS(cfg, configs.NEWUSER) {
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN can remount a read-only bind of a cgroup hierarchy read-write (drop the capability, add a user namespace, or remove the bind)")
	}
	return routes, nil
}

// enforcementRoutes lists the bind mounts that would show a member rauha's
// enforcement: a bpf filesystem (the root's pinned maps live on one; a
// pinned map is opened with bpf(BPF_OBJ_GET), which a read-only mount does
// not stop, and the file mode admits root without any capability), or the
// state root with the zone database. These hold on every backend.
func enforcementRoutes(cfg *configs.Config, root string, h *hostMounts) ([]string, error) {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var routes []string
	for _, b := range binds(cfg) {
		d, s := b.m.Destination, b.m.Source
		if b.fsType == unix.BPF_FS_MAGIC {
			routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a bind of %s, a bpf filesystem: rauha's pinned maps hold the zones' policies, and a member could rewrite them, read-only or not (remove the bind)", d, s))
			continue
		}
		if b.recursive() {
			below, err := h.below(b.src, "bpf")
			if err != nil {
				return nil, err
			}
			if len(below) > 0 {
				routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a recursive bind of %s, which holds the bpf filesystem %s: rauha's pinned maps hold the zones' policies, and a member could rewrite them, read-only or not (bind it without \"rbind\", or bind what is needed below it)", d, s, below[0]))
				continue
			}
		}
		if b.src == root || strings.HasPrefix(b.src, root+"/") || b.src == "/" || strings.HasPrefix(root, b.src+"/") {
			routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a bind of %s, which shows rauha's state root %s (the zone database and the containers' state) (remove the bind)", d, s, root))
		}
	}
	return routes, nil
}

// admitEscapeRoutes closes in cfg what closeEscapeRoutes can, and returns
// the routes left for admission: the enforcement routes on every backend,
// and without the bpf-lsm guard (guarded false) the cgroup escape routes.
func admitEscapeRoutes(cfg *configs.Config, p *zone.Policy, root string, guarded bool) ([]string, error) {
	h := &hostMounts{}
	if err := closeEscapeRoutes(cfg, p, guarded, h); err != nil {
		return nil, err
	}
	routes, err := enforcementRoutes(cfg, root, h)
	if err != nil || guarded {
		return routes, err
	}
	cg, err := cgroupEscapeRoutes(cfg, p, h)
	return append(routes, cg...), err
}
