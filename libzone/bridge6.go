package libzone

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// IPv6 of bridged zones (network.ipv6): the bridge carries the gateway of
// the zone's IPv6 subnet beside the IPv4 one, each member's eth0 its
// leased IPv6 address and a default route through it. Addresses are added
// with IFA_F_NODAD: rauha hands out every address of the subnet itself, so
// duplicate address detection has nothing to find, and without it the
// address is usable at once instead of "tentative" for a second or more,
// during which the member's first connections would fail. The one
// masquerading rule of the root's table (an inet table) rewrites IPv6 as
// it does IPv4; published ports get a DNAT rule per family.

func hostRoutes6() func(netip.Prefix) bool { return hostRoutesOf(netlink.FAMILY_V6) }

// ensureBridge6 gives the zone's bridge its IPv6 gateway address and lets
// it forward IPv6, once: a bridge that has the address already is left as
// it is. An address of another IPv6 subnet (a bridge left by a zone of the
// same name whose delete died) is removed.
func ensureBridge6(h *netlink.Handle, zoneName string, br netlink.Link, l *zone.Lease) error {
	name := br.Attrs().Name
	gw := prefixIPNet(netip.PrefixFrom(l.Gateway, l.Address.Bits()))
	addrs, err := h.AddrList(br, netlink.FAMILY_V6)
	if err != nil {
		return fmt.Errorf("IPv6 addresses of %s: %w", name, err)
	}
	for _, a := range addrs {
		if a.IPNet.String() == gw.String() {
			return nil
		}
	}
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			_ = h.AddrDel(br, &a)
		}
	}
	if err := enableForwarding6(name); err != nil {
		return fmt.Errorf("zone %s: %w", zoneName, err)
	}
	if err := h.AddrReplace(br, &netlink.Addr{IPNet: gw, Flags: unix.IFA_F_NODAD}); err != nil {
		return fmt.Errorf("zone %s: bridge %s address %s: %w", zoneName, name, gw, err)
	}
	return nil
}

// enableForwarding6 lets packets that come in through interface name be
// routed on. IPv6 has no per-interface "forwarding" that does this (that
// one only makes the interface act as a router for RAs); force_forwarding
// (Linux 6.17) does, without the host-wide net.ipv6.conf.all.forwarding,
// which rauha leaves alone. On an older kernel the host's setting decides.
func enableForwarding6(name string) error {
	dir := "/proc/sys/net/ipv6/conf/" + name + "/"
	if b, err := os.ReadFile(dir + "disable_ipv6"); err == nil && bytes.Equal(bytes.TrimSpace(b), []byte("1")) {
		if err := os.WriteFile(dir+"disable_ipv6", []byte("0"), 0o644); err != nil {
			return fmt.Errorf("enable IPv6 on %s: %w", name, err)
		}
	} else if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network.ipv6: IPv6 is disabled on this host (no %s): boot without ipv6.disable=1 or remove network.ipv6 from the policy", dir)
	}
	err := os.WriteFile(dir+"force_forwarding", []byte("1"), 0o644)
	if err == nil {
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("enable IPv6 forwarding on %s: %w", name, err)
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv6/conf/all/forwarding"); err == nil && !bytes.Equal(bytes.TrimSpace(b), []byte("0")) {
		return nil
	}
	return fmt.Errorf("network.ipv6: this kernel cannot forward IPv6 for %s alone (force_forwarding needs Linux 6.17) and net.ipv6.conf.all.forwarding is 0: set it to 1 (which also stops the host from accepting router advertisements unless accept_ra = 2) or remove network.ipv6 from the policy", name)
}

// plugMember6 gives the member's eth0 (peer, through the handle h in its
// namespace) its leased IPv6 address and a default route via the bridge.
func plugMember6(h *netlink.Handle, peer netlink.Link, rec *zone.Container) error {
	l := rec.Lease6
	if err := h.AddrAdd(peer, &netlink.Addr{IPNet: prefixIPNet(l.Address), Flags: unix.IFA_F_NODAD}); err != nil {
		return fmt.Errorf("container %s: IPv6 address %s: %w", rec.ID, l.Address, err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: peer.Attrs().Index, Gw: l.Gateway.AsSlice()}); err != nil {
		return fmt.Errorf("container %s: IPv6 default route via %s: %w", rec.ID, l.Gateway, err)
	}
	return nil
}

// missingAddr6 returns the member's leased IPv6 address when its eth0
// (peer) lacks it, "" when it has it or has no IPv6 lease.
func missingAddr6(h *netlink.Handle, peer netlink.Link, m *zone.Container) string {
	if m.Lease6 == nil {
		return ""
	}
	want := m.Lease6.Address.String()
	addrs, _ := h.AddrList(peer, netlink.FAMILY_V6)
	for _, a := range addrs {
		if a.IPNet.String() == want {
			return ""
		}
	}
	return want
}
