package libzone

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// AnnotationPorts publishes ports of a bridged member on the host:
// "HOSTPORT:CTRPORT[/tcp|/udp],..." (zone.ParsePorts).
const AnnotationPorts = "org.rauha.ports"

// Interfaces rauha creates for bridged zones (network.mode = "bridged"):
// one bridge per zone, named bridgePrefix, a hash of the root and one of
// root and zone, and one veth pair per member, its host end named
// vethPrefix, the root's hash and one of root and container id. The names
// are stable, so delete and reconcile find them without a record of their
// own, and short: IFNAMSIZ is 16. The alias of each (linkAlias) says which
// root, zone or container it is for, so reconcile removes only interfaces
// this root made. The kernel takes no alias when it creates a link: one
// set right after; an interface with the root's name prefix and no alias
// is one whose create died between the two.
const (
	bridgePrefix = "rz"
	vethPrefix   = "rv"
	// memberLink is the member's end of its veth pair, in its namespace.
	memberLink = "eth0"
)

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func bridgeName(root, zoneName string) string {
	return bridgePrefix + shortHash(root, 4) + shortHash(root+"\x00"+zoneName, 8)
}

func vethName(root, id string) string {
	return vethPrefix + shortHash(root, 4) + shortHash(root+"\x00"+id, 8)
}

func aliasPrefix(root string) string { return "rauha " + shortHash(root, 16) + " " }

func linkAlias(root, kind, name string) string { return aliasPrefix(root) + kind + " " + name }

// bridgedNetns reports whether rauha configures the container's network
// (bridged mode): only a namespace libcontainer creates for it, never one
// it joins by path (podman's, another container's), which its owner
// configures.
func bridgedNetns(cfg *configs.Config) bool {
	return cfg.Namespaces.Contains(configs.NEWNET) && cfg.Namespaces.PathOf(configs.NEWNET) == ""
}

// hostRoutes returns a zone.Lease hostTaken function: whether a route of
// the host's (other than a default route) overlaps a subnet. The routes
// are listed once, at the first question, which only a zone's first
// bridged member asks.
func hostRoutes() func(netip.Prefix) bool { return hostRoutesOf(netlink.FAMILY_V4) }

func hostRoutesOf(family int) func(netip.Prefix) bool {
	var routes []netip.Prefix
	listed := false
	return func(p netip.Prefix) bool {
		if !listed {
			listed = true
			rs, err := netlink.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
			if err == nil {
				for _, r := range rs {
					if q, ok := ipNetPrefix(r.Dst); ok && q.Bits() > 0 {
						routes = append(routes, q)
					}
				}
			}
		}
		for _, q := range routes {
			if q.Overlaps(p) {
				return true
			}
		}
		return false
	}
}

func ipNetPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), bits), true
}

func setAlias(h *netlink.Handle, l netlink.Link, alias string) error {
	if err := h.LinkSetAlias(l, alias); err != nil {
		return fmt.Errorf("interface %s: set alias: %w", l.Attrs().Name, err)
	}
	l.Attrs().Alias = alias
	return nil
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// hostNetlink opens one route netlink socket in the host's network
// namespace for all the requests of one operation: a package-level
// netlink call opens, binds and closes a socket of its own each time.
func hostNetlink() (*netlink.Handle, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return h, nil
}

// ownLink returns the interface name if it exists and carries alias (or
// none yet: see above), nil if there is none or it carries one of absent
// (a zone's bridge name held by the root's spare, parked under it); an
// interface of that name made by someone else is an error, never touched.
func ownLink(h *netlink.Handle, name, alias string, absent ...string) (netlink.Link, error) {
	l, err := h.LinkByName(name)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", name, err)
	}
	if slices.Contains(absent, l.Attrs().Alias) {
		return nil, nil
	}
	if l.Attrs().Alias == "" {
		return l, setAlias(h, l, alias)
	}
	if l.Attrs().Alias != alias {
		return nil, fmt.Errorf("interface %s exists and is not rauha's (alias %q, want %q): remove or rename it", name, l.Attrs().Alias, alias)
	}
	return l, nil
}

// plugMember wires a bridged member to its zone's bridge: a veth pair
// with eth0 in the member's network namespace ns, its leased address, a
// default route via the bridge, and the DNAT of its published ports;
// loopback up (wiring). It returns the addresses then in the namespace,
// read as memberAddrs reads them, through the handle it configured the
// namespace with.
func (e *Engine) plugMember(zoneName string, rec *zone.Container, ns netns.NsHandle) ([]string, error) {
	l := rec.Lease
	hh, err := hostNetlink()
	if err != nil {
		return nil, err
	}
	defer hh.Close()
	br, err := e.ensureBridge(hh, zoneName, l.Address.Masked(), l.Gateway)
	if err != nil {
		return nil, err
	}
	if rec.Lease6 != nil {
		if err := ensureBridge6(hh, zoneName, br, rec.Lease6); err != nil {
			return nil, err
		}
	}
	if err := e.addVeth(hh, rec.ID, br, ns); err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("container %s: netlink in its network namespace: %w", rec.ID, err)
	}
	defer h.Close()
	if lo, err := h.LinkByName("lo"); err != nil {
		return nil, fmt.Errorf("container %s: lo: %w", rec.ID, err)
	} else if err := h.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("container %s: set lo up: %w", rec.ID, err)
	}
	peer, err := h.LinkByName(memberLink)
	if err != nil {
		return nil, fmt.Errorf("container %s: %s: %w", rec.ID, memberLink, err)
	}
	// Without this, the kernel gives eth0 an IPv6 link-local address once
	// the pair's carrier is up, which happens asynchronously: after the
	// namespace's addresses were read, an address never registered as the
	// member's. A member's IPv6 address, if any, is its lease (plugMember6).
	if err := h.LinkSetIP6AddrGenMode(peer, 1 /* IN6_ADDR_GEN_MODE_NONE */); err != nil && !errors.Is(err, unix.EAFNOSUPPORT) {
		return nil, fmt.Errorf("container %s: IPv6 address generation on %s: %w", rec.ID, memberLink, err)
	}
	if err := h.AddrAdd(peer, &netlink.Addr{IPNet: prefixIPNet(l.Address)}); err != nil {
		return nil, fmt.Errorf("container %s: address %s: %w", rec.ID, l.Address, err)
	}
	if err := h.LinkSetUp(peer); err != nil {
		return nil, fmt.Errorf("container %s: set %s up: %w", rec.ID, memberLink, err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: peer.Attrs().Index, Gw: l.Gateway.AsSlice()}); err != nil {
		return nil, fmt.Errorf("container %s: default route via %s: %w", rec.ID, l.Gateway, err)
	}
	if rec.Lease6 != nil {
		if err := plugMember6(h, peer, rec); err != nil {
			return nil, err
		}
	}
	addrs, err := handleAddrs(h)
	if err != nil {
		return nil, fmt.Errorf("container %s: addresses in its network namespace: %w", rec.ID, err)
	}
	return addrStrings(addrs), e.publishPorts(rec)
}

// addVeth makes container id's veth pair: its host end up on the bridge br
// (one request), its peer eth0 in the network namespace ns.
func (e *Engine) addVeth(h *netlink.Handle, id string, br netlink.Link, ns netns.NsHandle) error {
	name, alias := vethName(e.root, id), linkAlias(e.root, "container", id)
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: name, Alias: alias, MasterIndex: br.Attrs().Index, Flags: net.FlagUp},
		PeerName:      memberLink,
		PeerNamespace: netlink.NsFd(int(ns)),
	}
	err := h.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) {
		// Left by a create of the same id that died: its namespace may
		// live on in a process that escaped its kill.
		old, oerr := ownLink(h, name, alias)
		if oerr != nil {
			return oerr
		}
		if old != nil {
			if err := h.LinkDel(old); err != nil {
				return fmt.Errorf("remove stale interface %s: %w", name, err)
			}
			err = h.LinkAdd(veth)
		}
	}
	if err != nil {
		return fmt.Errorf("create veth %s for container %s: %w", name, id, err)
	}
	return setAlias(h, veth, alias)
}

// publishPorts adds the DNAT rules of the member's published ports.
func (e *Engine) publishPorts(rec *zone.Container) error {
	if len(rec.Ports) == 0 {
		return nil
	}
	l := rec.Lease
	c, err := natConn()
	if err != nil {
		return err
	}
	t := newNATTable(e.root)
	// The member's rules may be there already: a create that installs the
	// root's kernel programs restores every member first (reconcile
	// rebuilds the table from the records, this one's among them). They
	// are replaced in the same batch, so the ports are published once.
	if err := t.delTagged(c, containerTag(rec.ID)); err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	_, pre, out := t.ensure(c)
	t.addPorts(c, rec.ID, l.Address.Addr(), rec.Ports, pre, out)
	if rec.Lease6 != nil {
		t.addPorts(c, rec.ID, rec.Lease6.Address.Addr(), rec.Ports, pre, out)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: publish ports of container %s: %w", rec.ID, err)
	}
	return nil
}

// ensureBridge returns the zone's bridge, made on its first member: the
// gateway address, forwarding on (for packets that come in through the
// bridge only: rauha changes no host-wide setting), up, and the zone's
// masquerading rule.
func (e *Engine) ensureBridge(h *netlink.Handle, zoneName string, subnet netip.Prefix, gw netip.Addr) (netlink.Link, error) {
	name, alias := bridgeName(e.root, zoneName), linkAlias(e.root, "zone", zoneName)
	gwNet := &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(gw, subnet.Bits()))}
	br, err := ownLink(h, name, alias, spareAlias(e.root))
	if err != nil {
		return nil, err
	}
	if br != nil {
		// A bridge left by a zone of the same name whose delete died
		// has another subnet's address.
		addrs, err := h.AddrList(br, netlink.FAMILY_V4)
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", name, err)
		}
		for _, a := range addrs {
			if a.IPNet.String() == gwNet.IPNet.String() {
				return br, nil
			}
		}
		for _, a := range addrs {
			_ = h.AddrDel(br, &a)
		}
		if err := h.AddrReplace(br, gwNet); err != nil {
			return nil, fmt.Errorf("zone %s: bridge %s address %s: %w", zoneName, name, gwNet.IPNet, err)
		}
		return br, e.ensureNAT()
	}
	if br, err = e.takeSpare(h, name, alias); err != nil {
		return nil, fmt.Errorf("zone %s: %w", zoneName, err)
	} else if br == nil {
		var raced bool
		if br, raced, err = addBridge(h, zoneName, name, alias); err != nil || raced {
			return br, err
		}
	}
	if err := h.AddrReplace(br, gwNet); err != nil {
		return nil, fmt.Errorf("zone %s: bridge %s address %s: %w", zoneName, name, gwNet.IPNet, err)
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+name+"/forwarding", []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("zone %s: enable forwarding on %s: %w", zoneName, name, err)
	}
	if br.Attrs().Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(br); err != nil {
			return nil, fmt.Errorf("zone %s: set %s up: %w", zoneName, name, err)
		}
	}
	return br, e.ensureNAT()
}

// addBridge creates the zone's bridge with its alias. raced: another
// member's create made it meanwhile, and it is that one, set up already.
func addBridge(h *netlink.Handle, zoneName, name, alias string) (br netlink.Link, raced bool, err error) {
	if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name, Alias: alias}}); errors.Is(err, unix.EEXIST) {
		br, err := ownLink(h, name, alias)
		return br, true, err
	} else if err != nil {
		return nil, false, fmt.Errorf("zone %s: create bridge %s: %w", zoneName, name, err)
	}
	if br, err = h.LinkByName(name); err != nil {
		return nil, false, fmt.Errorf("zone %s: bridge %s: %w", zoneName, name, err)
	}
	return br, false, setAlias(h, br, alias)
}

// ensureNAT makes the root's table when a new bridge finds none (the
// root's first bridged zone). Two creates racing may both add the
// masquerading rule; a second copy changes nothing, and reconcile
// rebuilds the table with one.
func (e *Engine) ensureNAT() error {
	c, err := natConn()
	if err != nil {
		return err
	}
	t := newNATTable(e.root)
	if ok, err := t.exists(c); err != nil || ok {
		return err
	}
	t.create(c)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: create table %s: %w", t.table.Name, err)
	}
	return nil
}

// unplugMember removes a bridged member's veth and the DNAT of its ports.
// A veth whose peer's namespace is being destroyed is left to the kernel,
// which removes the pair with the namespace (asynchronously, after the
// member's last process exited): deleting it here would wait for the
// kernel's own teardown of that namespace to release the RTNL lock and
// then for an RCU barrier, tens of milliseconds. A namespace some other
// process still holds (nsenter, a bind mount) keeps its pair, so the veth
// is deleted then, as before: its address goes back to the zone's pool.
func (e *Engine) unplugMember(h *netlink.Handle, rec *zone.Container) error {
	var errs []error
	name := vethName(e.root, rec.ID)
	if l, err := ownLink(h, name, linkAlias(e.root, "container", rec.ID)); err != nil {
		errs = append(errs, err)
	} else if l != nil && peerNetnsDying(l) {
		logrus.Debugf("container %s: interface %s is left to the kernel, which removes it with the container's network namespace", rec.ID, name)
	} else if l != nil {
		if err := h.LinkDel(l); err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("remove interface %s of container %s: %w", name, rec.ID, err))
		}
	}
	if len(rec.Ports) > 0 {
		c, err := natConn()
		if err == nil {
			err = newNATTable(e.root).delTagged(c, containerTag(rec.ID))
		}
		if err == nil {
			err = c.Flush()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("unpublish ports of container %s: %w", rec.ID, err))
		}
	}
	return errors.Join(errs...)
}

// peerNetnsDying reports whether the network namespace of veth l's peer
// is being destroyed (or gone). The kernel names a peer's namespace in
// IFLA_LINK_NETNSID of every RTM_GETLINK answer, assigning it an id in the
// host's namespace on the first one while it lives; it assigns none to a
// namespace whose last reference is gone (-1), and resolves an assigned
// id to such a namespace no more (RTM_GETNSID: ENOENT). A link without
// that attribute (its peer in the host's namespace, which rauha never
// makes) reads -1 too: the kernel's teardown never removes it, and
// reconcile does (no member holds it). Any other error counts as alive,
// so the veth is deleted.
func peerNetnsDying(l netlink.Link) bool {
	id := l.Attrs().NetNsID
	if id < 0 {
		return true
	}
	req := nl.NewNetlinkRequest(unix.RTM_GETNSID, unix.NLM_F_REQUEST)
	req.AddData(nl.NewRtGenMsg())
	req.AddData(nl.NewRtAttr(unix.NETNSA_NSID, nl.Uint32Attr(uint32(id))))
	_, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWNSID)
	return errors.Is(err, unix.ENOENT)
}

// zoneNet is what removing a zone from the store leaves to remove from the
// host: its bridge when it was bridged, and rauha's nftables table of the
// root with its last bridged zone.
type zoneNet struct {
	name          string
	bridged, last bool
}

// deleteZone removes zone name from the store (zone.Tx.DeleteZone, which
// frees its subnet) and says what of it is left on the host.
func deleteZone(tx *zone.Tx, name string) (zoneNet, error) {
	z, err := tx.Zone(name)
	if err != nil {
		return zoneNet{}, err
	}
	_, bridged := tx.Subnet(name)
	if err := tx.DeleteZone(name); err != nil {
		return zoneNet{}, err
	}
	// The paths of its denied inodes name the file events of its kernel
	// id: a zone that gets the id later must not inherit them.
	if err := tx.DeleteMeta(fileDenyMetaKey(z.ID)); err != nil {
		return zoneNet{}, fmt.Errorf("zone %s: forget the paths of its denied inodes: %w", name, err)
	}
	return zoneNet{name: name, bridged: bridged, last: bridged && len(tx.Subnets()) == 0}, nil
}

// unplugZone removes what deleteZone left on the host. The zone's bridge
// is parked as the root's spare (bridgespare.go) unless it was the root's
// last bridged zone and keepSpare is false: then the bridge, any spare and
// the root's nftables table go. With keepSpare, the table stays with the
// spare for the next bridged zone: it then holds the masquerading rule
// alone (the zone's members' port rules went with them), which rewrites
// nothing that did not come in through a bridge of some zone.
// h is the operation's host netlink handle; nil opens one when the zone
// was bridged.
func (e *Engine) unplugZone(h *netlink.Handle, n zoneNet, keepSpare bool) error {
	if !n.bridged {
		return nil
	}
	if h == nil {
		var err error
		if h, err = hostNetlink(); err != nil {
			return fmt.Errorf("zone %s: %w", n.name, err)
		}
		defer h.Close()
	}
	var errs []error
	name := bridgeName(e.root, n.name)
	if l, err := ownLink(h, name, linkAlias(e.root, "zone", n.name), spareAlias(e.root)); err != nil {
		errs = append(errs, err)
	} else if l != nil && ((n.last && !keepSpare) || !e.parkBridge(h, l)) {
		if err := h.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("zone %s: remove bridge %s: %w", n.name, name, err))
		}
	}
	if n.last && !keepSpare {
		c, err := natConn()
		if err == nil {
			err = newNATTable(e.root).drop(c)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("zone %s: %w", n.name, err))
		}
		if err := e.dropSpare(h); err != nil {
			errs = append(errs, fmt.Errorf("zone %s: %w", n.name, err))
		}
	}
	return errors.Join(errs...)
}

// reconcileNetwork makes the host's bridged networking of the root what
// the store says: interfaces of zones without a subnet and of containers
// without a lease (a create or delete that died) are removed, and rauha's
// nftables table is rebuilt from the subnets and the live members' ports
// in one transaction, or dropped when no zone is bridged.
func (e *Engine) reconcileNetwork(subnets map[string]netip.Prefix, members map[string]*zone.Container) ([]string, error) {
	var fixed []string
	var errs []error
	h, err := hostNetlink()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	prefix, r4 := aliasPrefix(e.root), shortHash(e.root, 4)
	kept := e.keptSpare()
	for _, l := range links {
		alias, ifname := l.Attrs().Alias, l.Attrs().Name
		ours := strings.HasPrefix(ifname, bridgePrefix+r4) || strings.HasPrefix(ifname, vethPrefix+r4)
		kind, name, ok := strings.Cut(strings.TrimPrefix(alias, prefix), " ")
		var stale bool
		switch {
		case alias == "" && ours && len(ifname) == len(bridgePrefix)+12:
			kind, name, stale = "unnamed", "(its create died before naming it)", true
		case ifname == spareName(e.root) && alias == "":
			// A park of an older rauha that died before its alias.
			kind, name, stale = spareKind, "bridge", true
		case !ok || !strings.HasPrefix(alias, prefix):
			continue
		case kind == spareKind:
			// One spare is kept for the next bridged zone: the one
			// the spare lock file names (bridgespare.go).
			stale = len(subnets) == 0 || ifname != kept
		case kind == "zone":
			_, held := subnets[name]
			stale = !held
		case kind == "container":
			stale = members[name] == nil
		default:
			continue
		}
		if !stale {
			continue
		}
		if err := h.LinkDel(l); err != nil && !errors.As(err, &netlink.LinkNotFoundError{}) {
			errs = append(errs, fmt.Errorf("remove interface %s of %s %s: %w", l.Attrs().Name, kind, name, err))
			continue
		}
		fixed = append(fixed, fmt.Sprintf("removed interface %s of %s %s: the store holds no network for it", l.Attrs().Name, kind, name))
	}
	c, err := natConn()
	if err != nil {
		return fixed, errors.Join(append(errs, err)...)
	}
	t := newNATTable(e.root)
	exists, err := t.exists(c)
	if err != nil && len(subnets) == 0 {
		// No bridged zone: a kernel without nf_tables holds nothing of
		// rauha's either.
		logrus.Debugf("reconcile: %v", err)
		return fixed, errors.Join(errs...)
	} else if err != nil {
		return fixed, errors.Join(append(errs, err)...)
	}
	if len(subnets) == 0 {
		if exists {
			if err := t.drop(c); err != nil {
				errs = append(errs, err)
			} else {
				fixed = append(fixed, "removed nftables table "+t.table.Name+": no zone is bridged")
			}
		}
		return fixed, errors.Join(errs...)
	}
	if exists {
		c.DelTable(t.table)
	}
	pre, out := t.create(c)
	for id, m := range members {
		if m.Lease != nil && len(m.Ports) > 0 {
			t.addPorts(c, id, m.Lease.Address.Addr(), m.Ports, pre, out)
			if m.Lease6 != nil {
				t.addPorts(c, id, m.Lease6.Address.Addr(), m.Ports, pre, out)
			}
		}
	}
	if err := c.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("nftables: rebuild table %s: %w", t.table.Name, err))
	}
	return fixed, errors.Join(errs...)
}

// verifyNetwork checks what network.mode promises for a member with a
// namespace of its own: isolated, loopback alone; bridged, its eth0 with
// the leased address, and its veth on the zone's bridge.
func (e *Engine) verifyNetwork(name string, m *zone.Container, z *zone.Zone, cfg *configs.Config, pid int, r *zone.IsolationReport) {
	mode := z.Policy.Network.Mode
	if !bridgedNetns(cfg) || (mode != zone.NetworkIsolated && mode != zone.NetworkBridged) {
		return
	}
	ns, err := netns.GetFromPath("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		r.Add(name+": network", false, "open the network namespace of pid %d: %v", pid, err)
		return
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		r.Add(name+": network", false, "netlink in the network namespace of pid %d: %v", pid, err)
		return
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		r.Add(name+": network", false, "interfaces of pid %d: %v", pid, err)
		return
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	if mode == zone.NetworkIsolated {
		if len(links) == 1 && links[0].Attrs().Flags&net.FlagLoopback != 0 {
			r.Add(name+": network", true, "isolated: loopback only")
		} else {
			r.Add(name+": network", false, "isolated, but its namespace has interfaces %s", strings.Join(names, ", "))
		}
		return
	}
	if m.Lease == nil {
		r.Add(name+": network", false, "bridged, but no address was leased for it")
		return
	}
	want := m.Lease.Address.String()
	peer, err := h.LinkByName(memberLink)
	if err != nil {
		r.Add(name+": network", false, "bridged, but %s is missing (interfaces %s): %v", memberLink, strings.Join(names, ", "), err)
		return
	}
	addrs, _ := h.AddrList(peer, netlink.FAMILY_V4)
	found := false
	for _, a := range addrs {
		found = found || a.IPNet.String() == want
	}
	missing6 := missingAddr6(h, peer, m)
	hh, err := hostNetlink()
	if err != nil {
		r.Add(name+": network", false, "%v", err)
		return
	}
	defer hh.Close()
	veth, verr := ownLink(hh, vethName(e.root, m.ID), linkAlias(e.root, "container", m.ID))
	br, berr := ownLink(hh, bridgeName(e.root, z.Name), linkAlias(e.root, "zone", z.Name))
	switch {
	case !found:
		r.Add(name+": network", false, "bridged, but %s lacks its leased address %s", memberLink, want)
	case missing6 != "":
		r.Add(name+": network", false, "bridged, but %s lacks its leased IPv6 address %s", memberLink, missing6)
	case verr != nil || berr != nil || veth == nil || br == nil:
		r.Add(name+": network", false, "bridged, but its veth or the zone's bridge is missing: %v", errors.Join(verr, berr))
	case veth.Attrs().MasterIndex != br.Attrs().Index:
		r.Add(name+": network", false, "bridged, but veth %s is not on the zone's bridge %s", veth.Attrs().Name, br.Attrs().Name)
	default:
		if m.Lease6 != nil {
			want += " " + m.Lease6.Address.String()
		}
		r.Add(name+": network", true, "bridged: %s %s, veth %s on bridge %s", memberLink, want, veth.Attrs().Name, br.Attrs().Name)
	}
}
