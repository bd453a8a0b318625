package zone

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Bridged networking (network.mode = "bridged"): each bridged zone holds
// one IPv4 subnet, whose first address is its bridge's (the members'
// gateway), and each bridged member leases one more address of it. The
// store keeps both, so two members never get one address and a crash
// leaves nothing that reconcile cannot tell from the records.

// DefaultSubnetPool is where a zone without network.subnet gets its
// subnet, one /DefaultSubnetBits at a time. It is outside the ranges
// docker (172.17.0.0/16 and up) and podman (10.88.0.0/16, 10.89.0.0/16)
// hand out by default.
var DefaultSubnetPool = netip.MustParsePrefix("10.201.0.0/16")

// DefaultSubnetBits is the prefix length of a subnet carved from
// DefaultSubnetPool: 253 members per zone, 256 bridged zones.
const DefaultSubnetBits = 24

// Subnet lengths a zone may ask for: /29 still leaves 5 members beside the
// gateway; /8 is the widest a host route table sensibly carries.
const (
	minSubnetBits = 8
	maxSubnetBits = 29
)

// ParseSubnet reads network.subnet: an IPv4 prefix of length /8 to /29,
// its host bits cleared.
func ParseSubnet(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a prefix (want an IPv4 CIDR such as 10.201.7.0/24)", s)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%q: only IPv4 subnets are supported", s)
	}
	if p.Bits() < minSubnetBits || p.Bits() > maxSubnetBits {
		return netip.Prefix{}, fmt.Errorf("%q: the prefix length must be between /%d and /%d", s, minSubnetBits, maxSubnetBits)
	}
	p = p.Masked()
	if p.Addr().IsLoopback() || p.Addr().IsMulticast() || p.Addr().IsUnspecified() || p.Contains(netip.AddrFrom4([4]byte{255, 255, 255, 255})) {
		return netip.Prefix{}, fmt.Errorf("%q: not a unicast range", s)
	}
	return p, nil
}

// Gateway is the address of a subnet's bridge: its first host address.
func Gateway(subnet netip.Prefix) netip.Addr { return subnet.Addr().Next() }

// Lease is a bridged member's address in its zone's subnet.
type Lease struct {
	Address netip.Prefix `json:"address"` // the member's address, with the subnet's length
	Gateway netip.Addr   `json:"gateway"` // the zone bridge's address, the member's default route
}

// Port is one published port: connections to HostPort on any local
// address of the host reach ContainerPort of the member.
type Port struct {
	HostPort      uint16 `json:"host_port"`
	ContainerPort uint16 `json:"container_port"`
	Protocol      string `json:"protocol"` // "tcp" or "udp"
}

func (p Port) String() string {
	return fmt.Sprintf("%d:%d/%s", p.HostPort, p.ContainerPort, p.Protocol)
}

// ParsePorts reads the org.rauha.ports annotation: a comma-separated list
// of HOSTPORT:CTRPORT[/tcp|/udp] (tcp when no protocol is given). A host
// port appears at most once per protocol.
func ParsePorts(s string) ([]Port, error) {
	var out []Port
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		spec, proto, ok := strings.Cut(f, "/")
		if !ok {
			proto = "tcp"
		}
		if proto != "tcp" && proto != "udp" {
			return nil, fmt.Errorf("port %q: protocol must be tcp or udp", f)
		}
		hs, cs, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("port %q: want HOSTPORT:CTRPORT[/tcp|/udp]", f)
		}
		hp, err1 := parsePort(hs)
		cp, err2 := parsePort(cs)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("port %q: %w", f, err)
		}
		key := proto + "/" + strconv.Itoa(int(hp))
		if seen[key] {
			return nil, fmt.Errorf("port %q: host port %d/%s is published twice", f, hp, proto)
		}
		seen[key] = true
		out = append(out, Port{HostPort: hp, ContainerPort: cp, Protocol: proto})
	}
	return out, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a port (1-65535)", s)
	}
	return uint16(n), nil
}

var (
	// bucketSubnets maps a bridged zone's name to its subnet (text).
	bucketSubnets = []byte("subnets")
	// bucketLeases holds the leased addresses: key zone name, NUL, the
	// address's 4 (IPv4) or 16 (IPv6) bytes; value the container id.
	bucketLeases = []byte("leases")
	// bucketPorts maps "tcp/8080" to the container publishing it.
	bucketPorts = []byte("ports")
)

func leaseKey(zone string, a netip.Addr) []byte {
	return append([]byte(zone+"\x00"), a.AsSlice()...)
}

func portKey(p Port) []byte { return []byte(p.Protocol + "/" + strconv.Itoa(int(p.HostPort))) }

// Subnet returns the subnet a bridged zone holds.
func (tx *Tx) Subnet(zone string) (netip.Prefix, bool) { return tx.subnetIn(bucketSubnets, zone) }

// Subnets returns the subnet of every bridged zone, by zone name.
func (tx *Tx) Subnets() map[string]netip.Prefix { return tx.subnetsIn(bucketSubnets) }

// subnetIn reads zone's subnet from bucket (bucketSubnets or
// bucketSubnets6) of either file.
func (tx *Tx) subnetIn(bucket []byte, zone string) (netip.Prefix, bool) {
	for _, implicit := range []bool{true, false} {
		if b := tx.bucketOf(implicit, bucket); b != nil {
			if p, err := netip.ParsePrefix(string(b.Get([]byte(zone)))); err == nil {
				return p, true
			}
		}
	}
	return netip.Prefix{}, false
}

// subnetsIn reads every zone's subnet from bucket of both files.
func (tx *Tx) subnetsIn(bucket []byte) map[string]netip.Prefix {
	out := map[string]netip.Prefix{}
	for _, implicit := range []bool{true, false} {
		b := tx.bucketOf(implicit, bucket)
		if b == nil {
			continue
		}
		_ = b.ForEach(func(k, v []byte) error {
			if p, err := netip.ParsePrefix(string(v)); err == nil {
				out[string(k)] = p
			}
			return nil
		})
	}
	return out
}

// putSubnet stores zone's new subnet in bucket of the zone's file.
func (tx *Tx) putSubnet(bucket []byte, zone string, p netip.Prefix) error {
	_, implicit, err := tx.findZone(zone)
	if err != nil {
		return err
	}
	b, err := tx.bucketOfToChange(implicit, bucket)
	if err != nil {
		return err
	}
	return b.Put([]byte(zone), []byte(p.String()))
}

// deleteSubnet removes zone's subnet from bucket of whichever file has it.
func (tx *Tx) deleteSubnet(bucket []byte, zone string) error {
	for _, implicit := range []bool{true, false} {
		if b := tx.bucketOf(implicit, bucket); b == nil || b.Get([]byte(zone)) == nil {
			continue
		}
		b, err := tx.bucketOfToChange(implicit, bucket)
		if err != nil {
			return err
		}
		if err := b.Delete([]byte(zone)); err != nil {
			return err
		}
	}
	return tx.err
}

// Lease gives container c (stored next, in the same transaction) an
// address in its zone's subnet, and the zone a subnet when it has none:
// want when the policy names one (network.subnet), else the first free
// one of DefaultSubnetPool. A subnet is free when no other zone holds one
// that overlaps it and hostTaken (the host's own routes) does not claim
// it. It also reserves c's published ports.
func (tx *Tx) Lease(c *Container, want string, hostTaken func(netip.Prefix) bool) error {
	subnet, ok := tx.Subnet(c.Zone)
	if !ok {
		var err error
		if subnet, err = tx.pickSubnet(c.Zone, want, hostTaken); err != nil {
			return err
		}
		if err := tx.putSubnet(bucketSubnets, c.Zone, subnet); err != nil {
			return fmt.Errorf("zone %q: store subnet: %w", c.Zone, err)
		}
	}
	leases, err := tx.writableBucket(bucketLeases)
	if err != nil {
		return err
	}
	gw := Gateway(subnet)
	for a := gw.Next(); subnet.Contains(a) && subnet.Contains(a.Next()); a = a.Next() {
		k := leaseKey(c.Zone, a)
		if leases.Get(k) != nil {
			continue
		}
		if err := leases.Put(k, []byte(c.ID)); err != nil {
			return fmt.Errorf("container %q: lease %s: %w", c.ID, a, err)
		}
		c.Lease = &Lease{Address: netip.PrefixFrom(a, subnet.Bits()), Gateway: gw}
		return tx.reservePorts(c)
	}
	return fmt.Errorf("zone %q: every address of its subnet %s is leased; delete members or give the zone a wider network.subnet (recreate the zone)", c.Zone, subnet)
}

// subnetFree returns a check of a candidate subnet for zone: why it cannot
// be zone's ("" when it can), because a subnet of another zone in held
// overlaps it or a route of the host covers it. Zones are tried in name
// order, so the reason names the same zone every time.
func subnetFree(held map[string]netip.Prefix, zone string, hostTaken func(netip.Prefix) bool) func(netip.Prefix) string {
	names := slices.Sorted(maps.Keys(held))
	return func(p netip.Prefix) string {
		for _, z := range names {
			if q := held[z]; z != zone && q.Overlaps(p) {
				return fmt.Sprintf("zone %q holds %s", z, q)
			}
		}
		if hostTaken != nil && hostTaken(p) {
			return "a route of the host covers it"
		}
		return ""
	}
}

// wantedSubnet is the subnet a policy's network.KEY names, if it parses
// and is free.
func wantedSubnet(zone, key, want string, parse func(string) (netip.Prefix, error), free func(netip.Prefix) string) (netip.Prefix, error) {
	p, err := parse(want)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("zone %q: network.%s %w", zone, key, err)
	}
	if why := free(p); why != "" {
		return netip.Prefix{}, fmt.Errorf("zone %q: network.%s %s is taken: %s", zone, key, p, why)
	}
	return p, nil
}

func (tx *Tx) pickSubnet(zone, want string, hostTaken func(netip.Prefix) bool) (netip.Prefix, error) {
	free := subnetFree(tx.Subnets(), zone, hostTaken)
	if want != "" {
		return wantedSubnet(zone, "subnet", want, ParseSubnet, free)
	}
	pool := DefaultSubnetPool
	step := uint32(1) << (32 - DefaultSubnetBits)
	base := pool.Addr().As4()
	start := binary.BigEndian.Uint32(base[:])
	for i := uint32(0); i < 1<<(DefaultSubnetBits-pool.Bits()); i++ {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], start+i*step)
		p := netip.PrefixFrom(netip.AddrFrom4(b), DefaultSubnetBits)
		if free(p) == "" {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("zone %q: no free /%d left in the default pool %s; give the zone a network.subnet", zone, DefaultSubnetBits, pool)
}

func (tx *Tx) reservePorts(c *Container) error {
	ports, err := tx.writableBucket(bucketPorts)
	if err != nil {
		return err
	}
	for _, p := range c.Ports {
		if owner := ports.Get(portKey(p)); owner != nil && string(owner) != c.ID {
			return fmt.Errorf("container %q: host port %d/%s is already published by container %q", c.ID, p.HostPort, p.Protocol, owner)
		}
		if err := ports.Put(portKey(p), []byte(c.ID)); err != nil {
			return fmt.Errorf("container %q: publish port %s: %w", c.ID, p, err)
		}
	}
	return nil
}

// releaseLease frees what Lease gave container c.
func (tx *Tx) releaseLease(c *Container) error {
	if c.Lease != nil {
		if b := tx.changing(bucketLeases); b != nil {
			if err := b.Delete(leaseKey(c.Zone, c.Lease.Address.Addr())); err != nil {
				return fmt.Errorf("container %q: free lease: %w", c.ID, err)
			}
		}
	}
	if err := tx.releaseLease6(c); err != nil {
		return err
	}
	if b := tx.changing(bucketPorts); b != nil {
		for _, p := range c.Ports {
			if string(b.Get(portKey(p))) == c.ID {
				if err := b.Delete(portKey(p)); err != nil {
					return fmt.Errorf("container %q: unpublish port %s: %w", c.ID, p, err)
				}
			}
		}
	}
	return nil
}

// releaseSubnet frees a deleted zone's subnet (its members, and so their
// leases, are gone first).
func (tx *Tx) releaseSubnet(zone string) error {
	if err := tx.deleteSubnet(bucketSubnets, zone); err != nil {
		return fmt.Errorf("zone %q: free subnet: %w", zone, err)
	}
	return tx.releaseSubnet6(zone)
}
