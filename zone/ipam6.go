package zone

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// IPv6 in bridged zones (network.ipv6, network.subnet6): a bridged zone
// that asks for it holds one IPv6 subnet beside its IPv4 one, with the same
// rules: the first address is its bridge's, each member leases one more.
// IPv6 is opt-in, as it is for docker and podman networks: a zone without
// it gets no IPv6 address, route or published port.

// DefaultSubnet6Bits is the prefix length of a subnet carved from a root's
// ULA pool (ULAPool): 65536 bridged zones of 2^64 addresses each.
const DefaultSubnet6Bits = 64

// Lengths network.subnet6 may have: /48 is a whole ULA site; /124 still
// leaves room for the gateway and 14 members.
const (
	minSubnet6Bits = 48
	maxSubnet6Bits = 124
)

// ULAPool is the /48 a root's zones without network.subnet6 carve their
// /64 from: a unique local prefix (fd00::/8, RFC 4193) whose 40-bit global
// id is a hash of the root, so each root has its own, and the same one
// after every restart and reconcile.
func ULAPool(root string) netip.Prefix {
	sum := sha256.Sum256([]byte("rauha ula\x00" + root))
	var a [16]byte
	a[0] = 0xfd
	copy(a[1:6], sum[:5])
	return netip.PrefixFrom(netip.AddrFrom16(a), 48)
}

// ParseSubnet6 reads network.subnet6: an IPv6 prefix of length /48 to
// /124, unicast (unique local or global), its host bits cleared.
func ParseSubnet6(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a prefix (want an IPv6 CIDR such as fd12:3456:789a:1::/64)", s)
	}
	if !p.Addr().Is6() || p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("%q: want an IPv6 subnet (network.subnet is the IPv4 one)", s)
	}
	if p.Bits() < minSubnet6Bits || p.Bits() > maxSubnet6Bits {
		return netip.Prefix{}, fmt.Errorf("%q: the prefix length must be between /%d and /%d", s, minSubnet6Bits, maxSubnet6Bits)
	}
	p = p.Masked()
	if a := p.Addr(); !a.IsGlobalUnicast() || a.IsLinkLocalUnicast() {
		return netip.Prefix{}, fmt.Errorf("%q: not a unique local or global unicast range", s)
	}
	return p, nil
}

// bucketSubnets6 maps a zone's name to its IPv6 subnet (text). Its leases
// are in bucketLeases beside the IPv4 ones (their keys are longer).
var bucketSubnets6 = []byte("subnets6")

// Subnet6 returns the IPv6 subnet a bridged zone holds.
func (tx *Tx) Subnet6(zone string) (netip.Prefix, bool) { return tx.subnetIn(bucketSubnets6, zone) }

// Subnets6 returns the IPv6 subnet of every zone that holds one.
func (tx *Tx) Subnets6() map[string]netip.Prefix { return tx.subnetsIn(bucketSubnets6) }

// Lease6 gives container c (leased an IPv4 address by Lease in the same
// transaction) an IPv6 address in its zone's IPv6 subnet, and the zone one
// when it has none: want when the policy names it (network.subnet6), else
// the first /64 of pool that no other zone holds and hostTaken does not
// claim.
func (tx *Tx) Lease6(c *Container, want string, pool netip.Prefix, hostTaken func(netip.Prefix) bool) error {
	subnet, ok := tx.Subnet6(c.Zone)
	if !ok {
		var err error
		if subnet, err = tx.pickSubnet6(c.Zone, want, pool, hostTaken); err != nil {
			return err
		}
		if err := tx.putSubnet(bucketSubnets6, c.Zone, subnet); err != nil {
			return fmt.Errorf("zone %q: store IPv6 subnet: %w", c.Zone, err)
		}
	}
	leases, err := tx.writableBucket(bucketLeases)
	if err != nil {
		return err
	}
	gw := Gateway(subnet)
	// A wide subnet is never searched to its end: 2^16 addresses taken in
	// a row means something else is wrong.
	for a, n := gw.Next(), 0; subnet.Contains(a) && n < 1<<16; a, n = a.Next(), n+1 {
		k := leaseKey(c.Zone, a)
		if leases.Get(k) != nil {
			continue
		}
		if err := leases.Put(k, []byte(c.ID)); err != nil {
			return fmt.Errorf("container %q: lease %s: %w", c.ID, a, err)
		}
		c.Lease6 = &Lease{Address: netip.PrefixFrom(a, subnet.Bits()), Gateway: gw}
		return nil
	}
	return fmt.Errorf("zone %q: no free address in its IPv6 subnet %s; delete members or give the zone a wider network.subnet6 (recreate the zone)", c.Zone, subnet)
}

func (tx *Tx) pickSubnet6(zone, want string, pool netip.Prefix, hostTaken func(netip.Prefix) bool) (netip.Prefix, error) {
	free := subnetFree(tx.Subnets6(), zone, hostTaken)
	if want != "" {
		return wantedSubnet(zone, "subnet6", want, ParseSubnet6, free)
	}
	if !pool.Addr().Is6() || pool.Bits() > DefaultSubnet6Bits-1 || pool.Bits() < DefaultSubnet6Bits-32 {
		return netip.Prefix{}, fmt.Errorf("zone %q: IPv6 pool %s cannot hold /%d subnets", zone, pool, DefaultSubnet6Bits)
	}
	// The subnet number goes in bits pool.Bits() .. 63: the second 8
	// bytes of the address stay zero.
	base := pool.Masked().Addr().As16()
	hi := binary.BigEndian.Uint64(base[:8])
	n := uint64(1) << (DefaultSubnet6Bits - pool.Bits())
	for i := uint64(0); i < n; i++ {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:8], hi|i)
		p := netip.PrefixFrom(netip.AddrFrom16(a), DefaultSubnet6Bits)
		if free(p) == "" {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("zone %q: no free /%d left in the IPv6 pool %s; give the zone a network.subnet6", zone, DefaultSubnet6Bits, pool)
}

// releaseLease6 frees the IPv6 address Lease6 gave container c.
func (tx *Tx) releaseLease6(c *Container) error {
	if c.Lease6 == nil {
		return nil
	}
	if b := tx.changing(bucketLeases); b != nil {
		if err := b.Delete(leaseKey(c.Zone, c.Lease6.Address.Addr())); err != nil {
			return fmt.Errorf("container %q: free IPv6 lease: %w", c.ID, err)
		}
	}
	return nil
}

// releaseSubnet6 frees a deleted zone's IPv6 subnet.
func (tx *Tx) releaseSubnet6(zone string) error {
	if err := tx.deleteSubnet(bucketSubnets6, zone); err != nil {
		return fmt.Errorf("zone %q: free IPv6 subnet: %w", zone, err)
	}
	return nil
}
