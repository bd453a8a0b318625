package libzone

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/landlock"
	"github.com/rauha-runtime/rauha/zone"
)

// Escape routes: what in a member's configuration would let its tasks undo
// their zone from inside. Two kinds:
//
//   - a way out of the member's cgroup (cgroupEscapeRoutes). Zone membership,
//     the egress programs and the limits are bound to the cgroup; a task that
//     moves itself elsewhere leaves them behind. The bpf-lsm backend's guard
//     (lsm/file_open) refuses an open of a cgroup2 cgroup.procs outside the
//     zone for writing, whatever led to the file (a second cgroup2 mount and
//     open_by_handle_at both end in file_open); the Landlock fallback has no
//     hook for it, and neither backend for the v1 hierarchies of a hybrid
//     host, so there the member must not be handed a route.
//   - a way to the enforcement itself (enforcementRoutes): rauha's pinned
//     maps, whose policy entries say what the zone may do, its state root,
//     and the host's procfs that leads to both. These count on every
//     backend: a member that can rewrite its own policy has no zone.
//
// closeEscapeRoutes first closes what can be closed without changing what
// an ordinary workload sees; the rest is refused by strict admission and
// named by verify.

// hostMounts reads the host's mount table once, and only when a recursive
// bind of a directory needs it.
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
	dir    bool   // src is a directory: mounts may sit below it
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

// mountScan is what the route checks know of a member's bind mounts: each
// source resolved once, and the host's mount table read at most once.
type mountScan struct {
	binds []bindSource
	host  *hostMounts
}

// scanBinds resolves the configuration's bind mounts whose source exists; a
// missing source fails libcontainer's mount itself.
func scanBinds(cfg *configs.Config, h *hostMounts) *mountScan {
	s := &mountScan{host: h}
	for _, m := range cfg.Mounts {
		if !m.IsBind() {
			continue
		}
		src, err := filepath.EvalSymlinks(m.Source)
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		var fi unix.Stat_t
		if unix.Statfs(src, &st) != nil || unix.Stat(src, &fi) != nil {
			continue
		}
		s.binds = append(s.binds, bindSource{m: m, src: src, fsType: st.Type, dir: fi.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	return s
}

// carried lists the mounts of the given types that bind b takes into the
// container from below its source: only a recursive bind of a directory
// carries any (docker and podman bind their files with "rbind" too).
func (s *mountScan) carried(b bindSource, types ...string) ([]string, error) {
	if !b.recursive() || !b.dir {
		return nil, nil
	}
	return s.host.below(b.src, types...)
}

// cgroupFSType names a cgroup filesystem as the mount table does, or "".
func cgroupFSType(magic int64) string {
	switch magic {
	case unix.CGROUP_SUPER_MAGIC:
		return "cgroup"
	case unix.CGROUP2_SUPER_MAGIC:
		return "cgroup2"
	}
	return ""
}

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
//   - where a hierarchy is unguarded, open_by_handle_at fails with EPERM for
//     a member that could use it to reach a cgroup outside its namespace
//     (handleRoute). Docker's default profile allows that call only with
//     CAP_DAC_READ_SEARCH, so this takes it from the few images that keep
//     both capabilities; refusing them would take the whole container.
func closeEscapeRoutes(cfg *configs.Config, p *zone.Policy, unguarded []string, s *mountScan) error {
	for _, b := range s.binds {
		if b.m.Flags&unix.MS_RDONLY == 0 || b.recReadOnly() {
			continue
		}
		below, err := s.carried(b, cgroupFSTypes...)
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
	if len(unguarded) > 0 && handleRoute(cfg, p) {
		denySyscalls(cfg, []string{"open_by_handle_at"})
	}
	return nil
}

// unguardedHierarchies lists the cgroup filesystems in which no kernel hook
// of the backend judges a write of cgroup.procs: both on the fallback; on
// bpf-lsm, whose guard judges cgroup2 (where zone membership is), the v1
// hierarchies of a hybrid host, where the pids and memory limits are.
func unguardedHierarchies(guarded bool) []string {
	switch {
	case !guarded:
		return cgroupFSTypes
	case cgroups.IsCgroup2UnifiedMode():
		return nil
	}
	return []string{"cgroup"}
}

// cgroupEscapeRoutes lists what in a member's configuration would let its
// tasks write cgroup.procs (or a v1 tasks file) outside their own cgroup in
// one of the unguarded hierarchies (unguardedHierarchies):
//   - a writable bind mount of a cgroup hierarchy, or a recursive bind whose
//     tree holds one and is not read-only all the way down (libcontainer's
//     own "cgroup" mounts show only the container's subtree and are not
//     counted);
//   - CAP_SYS_ADMIN, kept by the policy, without a private cgroup namespace:
//     it can mount the whole hierarchy itself;
//   - CAP_SYS_ADMIN with a bind of a cgroup hierarchy, read-only or not, and
//     no user namespace: it can remount the bind read-write;
//   - CAP_SYS_ADMIN in a shared pid namespace: setns into the cgroup
//     namespace of a process outside the member, through /proc/PID/ns,
//     unless the fallback's Landlock domain holds the member
//     (landlockConfinesPtrace);
//   - CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH in a cgroup namespace with
//     open_by_handle_at allowed (handleRoute).
//
// Leaving a cgroup escapes the cgroup-bound controls (egress programs, device
// rules, limits); the Landlock domain and seccomp filter stay with the task.
func cgroupEscapeRoutes(cfg *configs.Config, p *zone.Policy, s *mountScan, unguarded []string) ([]string, error) {
	if len(unguarded) == 0 {
		return nil, nil
	}
	var routes []string
	exposed := false // some bind shows a cgroup hierarchy of the host
	for _, b := range s.binds {
		d, src := b.m.Destination, b.m.Source
		if t := cgroupFSType(b.fsType); t != "" {
			if !slices.Contains(unguarded, t) {
				continue
			}
			exposed = true
			if !b.topReadOnly() {
				routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a writable mount of the cgroup hierarchy %s (mount it read-only)", d, src))
			}
			continue
		}
		below, err := s.carried(b, unguarded...)
		if err != nil {
			return nil, err
		}
		if len(below) == 0 {
			continue
		}
		exposed = true
		switch {
		case !b.topReadOnly():
			routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a writable recursive bind of %s, which holds the cgroup hierarchy %s (mount it read-only)", d, src, below[0]))
		case !b.recReadOnly():
			routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a recursive bind of %s that is read-only only at its top: the cgroup hierarchy %s below it stays writable (use \"rro\")", d, src, below[0]))
		}
	}
	if !keepsCap(cfg, p, "CAP_SYS_ADMIN") {
		return routes, nil
	}
	switch {
	case !privateNS(cfg, configs.NEWCGROUP):
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN without a cgroup namespace of its own can mount the whole cgroup hierarchy (add a cgroup namespace or drop the capability)")
	case !privateNS(cfg, configs.NEWPID) && !(slices.Contains(unguarded, "cgroup2") && landlockConfinesPtrace(cfg, p)):
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN in a shared pid namespace can enter another process's cgroup namespace through /proc/PID/ns/cgroup and mount the cgroups outside its own (add a pid namespace or drop the capability)")
	case handleRoute(cfg, p):
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN with CAP_DAC_READ_SEARCH can mount cgroup2 and open a cgroup outside its namespace by handle (open_by_handle_at) (drop either capability)")
	}
	if exposed && !privateNS(cfg, configs.NEWUSER) {
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN can remount a read-only bind of a cgroup hierarchy read-write (drop the capability, add a user namespace, or remove the bind)")
	}
	return routes, nil
}

// landlockConfinesPtrace reports whether the fallback gives the member a
// Landlock domain: Landlock denies a task in a domain every ptrace-mode
// access to tasks outside it, opening their /proc/PID/ns files included. A
// shared pid namespace gets a domain scoped for signals where the kernel can
// scope them (ABI 6); path rules get one on any Landlock.
func landlockConfinesPtrace(cfg *configs.Config, p *zone.Policy) bool {
	r := landlockRules(p, cfg, false)
	abi := landlock.ABI()
	return abi >= 1 && hasPathRules(r) || abi >= 6 && r.ScopeSignals
}

// enforcementRoutes lists the bind mounts that would show a member rauha's
// enforcement: a bpf filesystem (the root's pinned maps live on one; a
// pinned map is opened with bpf(BPF_OBJ_GET), which a read-only mount does
// not stop, and the file mode admits root without any capability), the
// state root with the zone database, or a procfs of the host, whose
// /proc/PID/root leads to both. These hold on every backend.
func enforcementRoutes(s *mountScan, root string) ([]string, error) {
	if len(s.binds) == 0 {
		return nil, nil
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var routes []string
	for _, b := range s.binds {
		d, src := b.m.Destination, b.m.Source
		if b.fsType == unix.BPF_FS_MAGIC {
			routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a bind of %s, a bpf filesystem: rauha's pinned maps hold the zones' policies, and a member could rewrite them, read-only or not (remove the bind)", d, src))
			continue
		}
		below, err := s.carried(b, "bpf")
		if err != nil {
			return nil, err
		}
		if len(below) > 0 {
			routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a recursive bind of %s, which holds the bpf filesystem %s: rauha's pinned maps hold the zones' policies, and a member could rewrite them, read-only or not (bind it without \"rbind\", or bind what is needed below it)", d, src, below[0]))
			continue
		}
		if within(b.src, root) || within(root, b.src) {
			routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a bind of %s, which shows rauha's state root %s (the zone database and the containers' state) (remove the bind)", d, src, root))
			continue
		}
		procs, err := s.carried(b, "proc")
		if err != nil {
			return nil, err
		}
		if b.fsType == unix.PROC_SUPER_MAGIC || len(procs) > 0 {
			routes = append(routes, fmt.Sprintf("enforcement reachable: %s is a bind of %s, which shows a procfs of the host: /proc/PID/root of a process outside the zone leads to the pins and the state root (mount a proc filesystem of the container's own instead)", d, src))
		}
	}
	return routes, nil
}

// admitEscapeRoutes closes in cfg what closeEscapeRoutes can, and returns
// the routes left for admission: the enforcement routes, and the cgroup
// escape routes in the hierarchies the backend does not guard (guarded: the
// bpf-lsm backend).
func admitEscapeRoutes(cfg *configs.Config, p *zone.Policy, root string, guarded bool) ([]string, error) {
	s := scanBinds(cfg, &hostMounts{})
	unguarded := unguardedHierarchies(guarded)
	if err := closeEscapeRoutes(cfg, p, unguarded, s); err != nil {
		return nil, err
	}
	routes, err := enforcementRoutes(s, root)
	if err != nil {
		return nil, err
	}
	cg, err := cgroupEscapeRoutes(cfg, p, s, unguarded)
	return append(routes, cg...), err
}
