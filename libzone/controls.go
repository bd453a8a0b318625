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
	if !keepsBPF(cfg, p) {
		denySyscalls(cfg, []string{"bpf"})
	}
	limitResources(cfg.Cgroups.Resources, &p.Resources)
	if p.Devices.Allowed != nil {
		filterDevices(cfg, *p.Devices.Allowed)
	}
	switch p.Network.Mode {
	case zone.NetworkIsolated, zone.NetworkBridged:
		if !cfg.Namespaces.Contains(configs.NEWNET) {
			conflicts = append(conflicts, fmt.Sprintf("network.mode=%s needs a network namespace, but the container shares the host's", p.Network.Mode))
		} else if path := cfg.Namespaces.PathOf(configs.NEWNET); path != "" && p.Network.Mode == zone.NetworkBridged {
			conflicts = append(conflicts, fmt.Sprintf("network.mode=bridged needs a new network namespace for rauha to wire to the zone's bridge (a network namespace entry without a path), but the container joins %s, which its owner configures", path))
		}
	case zone.NetworkHost:
		if cfg.Namespaces.Contains(configs.NEWNET) && cfg.Namespaces.PathOf(configs.NEWNET) == "" {
			conflicts = append(conflicts, "network.mode=host, but the container asks for a network namespace of its own")
		}
	}
	return conflicts
}

// keepsBPF reports whether a member may call bpf(2): only when it keeps
// CAP_BPF or CAP_SYS_ADMIN, in its own bounding set and in the policy's
// capability list (an absent list keeps the container's sets). Every other
// member gets EPERM from seccomp, also for the commands the kernel allows
// without a capability: BPF_OBJ_GET of a pinned object needs nothing but
// the file, so a pin directory reachable from the container (a bind mount
// of /sys/fs/bpf, an fd passed in) would hand it the maps that enforce
// every zone. This holds in audit mode too: the maps are shared by all
// zones of the root.
func keepsBPF(cfg *configs.Config, p *zone.Policy) bool {
	return keepsCap(cfg, p, "CAP_BPF") || keepsCap(cfg, p, "CAP_SYS_ADMIN")
}

// limitCapabilities keeps in every capability set of proc only what the
// policy allows. An absent list keeps the sets; an empty one clears them.
// A zone that restricts egress (and enforces) loses CAP_NET_RAW unless its
// list names it: packet sockets send frames no cgroup program sees, and
// raw sockets forge any header.
func limitCapabilities(proc *libcontainer.Process, p *zone.Policy) {
	if proc.Capabilities == nil {
		return
	}
	var keep func(set []string) []string
	switch {
	case p.Capabilities.Allowed != nil:
		allowed := map[string]bool{}
		for _, name := range *p.Capabilities.Allowed {
			if n, err := zone.CapabilityName(name); err == nil {
				allowed[n] = true
			}
		}
		keep = func(set []string) []string {
			return slices.DeleteFunc(slices.Clone(set), func(c string) bool { return !allowed[c] })
		}
	case restrictsEgress(p):
		keep = func(set []string) []string {
			return slices.DeleteFunc(slices.Clone(set), func(c string) bool { return c == "CAP_NET_RAW" })
		}
	default:
		return
	}
	c := proc.Capabilities
	c.Bounding, c.Effective, c.Inheritable = keep(c.Bounding), keep(c.Effective), keep(c.Inheritable)
	c.Permitted, c.Ambient = keep(c.Permitted), keep(c.Ambient)
}

// restrictsEgress reports whether a policy enforces an egress allow-list;
// without a capability list it then takes CAP_NET_RAW (in audit mode the
// packet program reports raw packets and lets them through).
func restrictsEgress(p *zone.Policy) bool {
	return p.Network.AllowedEgress != nil && p.Zone.Mode != zone.ModeAudit
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
