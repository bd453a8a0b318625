package libzone

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// memberAddrs reads the addresses of a member's network namespace (its
// init is pid), which become its zone's (network.allowed_zones): podman,
// CNI and containerd configure the namespace before create, and a
// container that joins another's namespace shares its addresses. A member
// in the host's namespace has none of its own. Loopback addresses are
// every namespace's and name no member.
func memberAddrs(cfg *configs.Config, pid int) ([]string, error) {
	if !cfg.Namespaces.Contains(configs.NEWNET) {
		return nil, nil
	}
	addrs, err := netnsAddrs(pid)
	if err != nil {
		return nil, err
	}
	return addrStrings(addrs), nil
}

// bareNetns reports whether a member's network namespace is new, made by
// its init, and nothing has put an address in it before the init waits for
// start: no device moved in (netDevices), no hook that runs by then
// (prestart, createRuntime, createContainer). It then holds its loopback
// alone, which names no member, and create does not read it (netlink in
// the namespace was 0.7 ms of every create). Addresses added later are
// registered like any added after create (reconcile).
func bareNetns(cfg *configs.Config) bool {
	if !cfg.Namespaces.Contains(configs.NEWNET) || cfg.Namespaces.PathOf(configs.NEWNET) != "" {
		return false
	}
	if len(cfg.NetDevices) > 0 || len(cfg.Routes) > 0 {
		return false
	}
	for _, n := range cfg.Networks {
		if n.Type != "loopback" {
			return false
		}
	}
	for _, h := range []configs.HookName{configs.Prestart, configs.CreateRuntime, configs.CreateContainer} {
		if len(cfg.Hooks[h]) > 0 {
			return false
		}
	}
	return true
}

// netnsAddrs lists the non-loopback addresses of every interface in the
// network namespace of pid, sorted, through a netlink socket opened in it
// (no thread of rauha enters the namespace for longer than that).
func netnsAddrs(pid int) ([]netip.Addr, error) {
	ns, err := netns.GetFromPath("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("open the network namespace of pid %d: %w", pid, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink in the network namespace of pid %d: %w", pid, err)
	}
	defer h.Close()
	out, err := handleAddrs(h)
	if err != nil {
		return nil, fmt.Errorf("addresses in the network namespace of pid %d: %w", pid, err)
	}
	return out, nil
}

// handleAddrs lists, sorted, the non-loopback addresses of every interface
// in the network namespace of the netlink handle h.
func handleAddrs(h *netlink.Handle) ([]netip.Addr, error) {
	list, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range list {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsUnspecified() {
			continue
		}
		out = append(out, ip)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), nil
}

func addrStrings(addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

func parseAddrs(s []string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range s {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("registered address: %w", err)
		}
		out = append(out, ip)
	}
	return out, nil
}
