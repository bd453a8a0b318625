package libzone

import (
	"fmt"
	"slices"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// The controls in this file are the ones a zone policy sets through the
// container's own configuration, so libcontainer and the kernel enforce them
// the same way on every backend: capability sets, seccomp, cgroup limits and
// device rules. Filesystem, exec, network and cross-zone controls belong to
// the Enforcer.

// applyConfigControls narrows cfg to what policy p allows. It returns a
// description of every conflict it cannot resolve by narrowing (for
// admission).
func applyConfigControls(cfg *configs.Config, p *zone.Policy) []string {
	var conflicts []string
	if len(p.Syscalls.Deny) > 0 {
		denySyscalls(cfg, p.Syscalls.Deny)
	}
	limitResources(cfg.Cgroups.Resources, &p.Resources)
	if p.Devices.Allowed != nil {
		filterDevices(cfg, *p.Devices.Allowed)
	}
	switch p.Network.Mode {
	case zone.NetworkIsolated, zone.NetworkBridged:
		if !cfg.Namespaces.Contains(configs.NEWNET) {
			conflicts = append(conflicts, fmt.Sprintf("network.mode=%s needs a network namespace, but the container shares the host's", p.Network.Mode))
		}
	case zone.NetworkHost:
		if cfg.Namespaces.Contains(configs.NEWNET) && cfg.Namespaces.PathOf(configs.NEWNET) == "" {
			conflicts = append(conflicts, "network.mode=host, but the container asks for a network namespace of its own")
		}
	}
	return conflicts
}

// limitCapabilities keeps in every capability set of proc only what the
// policy allows. An absent list keeps the sets; an empty one clears them.
func limitCapabilities(proc *libcontainer.Process, p *zone.Policy) {
	if p.Capabilities.Allowed == nil || proc.Capabilities == nil {
		return
	}
	allowed := map[string]bool{}
	for _, name := range *p.Capabilities.Allowed {
		if n, err := zone.CapabilityName(name); err == nil {
			allowed[n] = true
		}
	}
	keep := func(set []string) []string {
		return slices.DeleteFunc(slices.Clone(set), func(c string) bool { return !allowed[c] })
	}
	c := proc.Capabilities
	c.Bounding, c.Effective, c.Inheritable = keep(c.Bounding), keep(c.Effective), keep(c.Inheritable)
	c.Permitted, c.Ambient = keep(c.Permitted), keep(c.Ambient)
}

// denySyscalls makes the named syscalls fail with EPERM. A rule the profile
// already has for the same syscall is replaced: libseccomp refuses two rules
// with different actions for one syscall.
func denySyscalls(cfg *configs.Config, names []string) {
	if cfg.Seccomp == nil {
		cfg.Seccomp = &configs.Seccomp{DefaultAction: configs.Allow}
	}
	eperm := uint(unix.EPERM)
	s := cfg.Seccomp
	s.Syscalls = slices.DeleteFunc(s.Syscalls, func(sc *configs.Syscall) bool { return slices.Contains(names, sc.Name) })
	for _, n := range names {
		s.Syscalls = append(s.Syscalls, &configs.Syscall{Name: n, Action: configs.Errno, ErrnoRet: &eperm})
	}
}

// limitResources lowers the container's cgroup limits to the policy's
// where the policy sets one and the container asks for more (or nothing).
func limitResources(r *cgroups.Resources, p *zone.Resources) {
	if m := int64(p.MemoryLimit); m > 0 && (r.Memory <= 0 || r.Memory > m) {
		r.Memory = m
	}
	if p.PidsMax > 0 && (r.PidsLimit == nil || *r.PidsLimit <= 0 || *r.PidsLimit > p.PidsMax) {
		limit := p.PidsMax
		r.PidsLimit = &limit
	}
	if p.CPUShares > 0 && (r.CpuShares == 0 || r.CpuShares > uint64(p.CPUShares)) {
		r.CpuShares = uint64(p.CPUShares)
	}
	if p.IOWeight > 0 && (r.BlkioWeight == 0 || r.BlkioWeight > uint16(p.IOWeight)) {
		r.BlkioWeight = uint16(p.IOWeight)
	}
}

// filterDevices drops every device node and cgroup allow rule for a
// character or block device the policy does not list. Deny rules and
// mknod-only rules stay.
func filterDevices(cfg *configs.Config, names []string) {
	var allowed []zone.Device
	for _, n := range names {
		if d, ok := zone.LookupDevice(n); ok {
			allowed = append(allowed, d)
		}
	}
	ok := func(t config.Type, major, minor int64) bool {
		for _, d := range allowed {
			if string(t) == d.Type && major == d.Major && (d.Minor == -1 || minor == d.Minor) {
				return true
			}
		}
		return false
	}
	cfg.Devices = slices.DeleteFunc(cfg.Devices, func(d *config.Device) bool {
		return !ok(d.Type, d.Major, d.Minor)
	})
	r := cfg.Cgroups.Resources
	r.Devices = slices.DeleteFunc(r.Devices, func(rule *config.Rule) bool {
		if !rule.Allow || rule.Permissions == "m" {
			return false
		}
		if rule.Major == config.Wildcard || rule.Minor == config.Wildcard && rule.Type != config.CharDevice {
			return true // a wildcard would let everything through again
		}
		return !ok(rule.Type, rule.Major, rule.Minor)
	})
}

// cgroupEscapeRoutes lists what in a member's configuration would let its
// tasks write cgroup.procs outside their own cgroup subtree. The bpf-lsm
// backend's guard stops such a write in the kernel; the Landlock fallback has
// no hook for it, so there the container must not be handed a route:
//   - a writable bind mount of a cgroup hierarchy (libcontainer's own
//     "cgroup" mounts show only the container's subtree and are not counted);
//   - CAP_SYS_ADMIN, kept by the policy, without a private cgroup namespace:
//     it can mount the whole hierarchy itself.
//
// Leaving a cgroup escapes the cgroup-bound controls (egress programs, device
// rules, limits); the Landlock domain and seccomp filter stay with the task.
func cgroupEscapeRoutes(cfg *configs.Config, p *zone.Policy) []string {
	var routes []string
	for _, m := range cfg.Mounts {
		if !m.IsBind() || m.Flags&unix.MS_RDONLY != 0 {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(m.Source, &st); err != nil {
			continue // libcontainer fails the mount itself
		}
		if st.Type == unix.CGROUP_SUPER_MAGIC || st.Type == unix.CGROUP2_SUPER_MAGIC {
			routes = append(routes, fmt.Sprintf("cgroup escape guard: %s is a writable mount of the cgroup hierarchy %s (mount it read-only)", m.Destination, m.Source))
		}
	}
	if keepsCapability(cfg, p, "CAP_SYS_ADMIN") && !cfg.Namespaces.Contains(configs.NEWCGROUP) {
		routes = append(routes, "cgroup escape guard: CAP_SYS_ADMIN without a cgroup namespace can mount the whole cgroup hierarchy (add a cgroup namespace or drop the capability)")
	}
	return routes
}

// keepsCapability reports whether the member's init may hold capability c
// (CAP_ spelling): its bounding set has it and the policy does not take it.
func keepsCapability(cfg *configs.Config, p *zone.Policy, c string) bool {
	if cfg.Capabilities == nil || !slices.Contains(cfg.Capabilities.Bounding, c) {
		return false
	}
	a := p.Capabilities.Allowed
	return a == nil || slices.ContainsFunc(*a, func(name string) bool {
		n, err := zone.CapabilityName(name)
		return err == nil && n == c
	})
}
