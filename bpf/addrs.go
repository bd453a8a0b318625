package bpf

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cilium/ebpf"
)

// Addresses of zone members (network.allowed_zones). member_addr holds
// what each member registered; zone_addr, which the packet programs read,
// is derived from it: an address belongs to the zone of the members that
// hold it. Members that share a network namespace hold the same
// addresses, and a delete removes an address only with its last holder.

func addrKey(a netip.Addr) rauhaAddrKey { return rauhaAddrKey{Addr: a.As16()} }

func keyAddr(b [16]byte) netip.Addr { return netip.AddrFrom16(b).Unmap() }

// SetMemberAddrs makes addrs the addresses registered for member cgid of
// zone, replacing what it registered before. An address that a member of
// another zone holds already stays that zone's (verify reports it: see
// AddrZones).
func (k *Kernel) SetMemberAddrs(zone uint32, cgid uint64, addrs []netip.Addr) (err error) {
	if err := checkZone(zone); err != nil {
		return err
	}
	unlock, err := lockPinDir(k.pinDir)
	if err != nil {
		return err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()
	held, err := k.memberAddrEntries()
	if err != nil {
		return err
	}
	want := map[rauhaAddrKey]bool{}
	for _, a := range addrs {
		want[addrKey(a)] = true
	}
	changed := map[rauhaAddrKey]bool{}
	for mk, z := range held {
		ak := rauhaAddrKey{Addr: mk.Addr}
		if mk.Cgid != cgid || (want[ak] && z == zone) {
			continue
		}
		if err := deleteIfPresent(k.maps.MemberAddr, mk); err != nil {
			return fmt.Errorf("unregister address %v of cgroup %d: %w", keyAddr(mk.Addr), cgid, err)
		}
		delete(held, mk)
		changed[ak] = true
	}
	for ak := range want {
		mk := rauhaMemberAddrKey{Cgid: cgid, Addr: ak.Addr}
		if _, ok := held[mk]; ok {
			continue
		}
		if err := k.maps.MemberAddr.Update(mk, zone, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("register address %v of cgroup %d (member_addr full?): %w", keyAddr(ak.Addr), cgid, err)
		}
		held[mk] = zone
		changed[ak] = true
	}
	return k.deriveZoneAddrs(held, changed)
}

// removeMemberAddrs unregisters every address of member cgid. The caller
// holds the pin-directory lock.
func (k *Kernel) removeMemberAddrs(cgid uint64) error {
	held, err := k.memberAddrEntries()
	if err != nil {
		return err
	}
	changed := map[rauhaAddrKey]bool{}
	for mk := range held {
		if mk.Cgid != cgid {
			continue
		}
		if err := deleteIfPresent(k.maps.MemberAddr, mk); err != nil {
			return fmt.Errorf("unregister address %v of cgroup %d: %w", keyAddr(mk.Addr), cgid, err)
		}
		delete(held, mk)
		changed[rauhaAddrKey{Addr: mk.Addr}] = true
	}
	return k.deriveZoneAddrs(held, changed)
}

// PruneAddrs drops the addresses of cgroups registered in no zone (what a
// create or delete killed half-way leaves) and rebuilds zone_addr from
// member_addr. It returns the addresses it dropped from zone_addr.
func (k *Kernel) PruneAddrs() (_ []netip.Addr, err error) {
	unlock, err := lockPinDir(k.pinDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	defer func() { err = errors.Join(err, k.netChanged()) }()
	members, err := k.Members()
	if err != nil {
		return nil, err
	}
	held, err := k.memberAddrEntries()
	if err != nil {
		return nil, err
	}
	all := map[rauhaAddrKey]bool{}
	for mk := range held {
		all[rauhaAddrKey{Addr: mk.Addr}] = true
		if _, ok := members[mk.Cgid]; ok {
			continue
		}
		if err := deleteIfPresent(k.maps.MemberAddr, mk); err != nil {
			return nil, fmt.Errorf("unregister address %v of cgroup %d: %w", keyAddr(mk.Addr), mk.Cgid, err)
		}
		delete(held, mk)
	}
	zones, err := k.zoneAddrEntries()
	if err != nil {
		return nil, err
	}
	var dropped []netip.Addr
	for ak := range zones {
		all[ak] = true
	}
	for ak := range all {
		if _, ok := zones[ak]; ok && len(heldBy(held, ak)) == 0 {
			dropped = append(dropped, keyAddr(ak.Addr))
		}
	}
	slices.SortFunc(dropped, netip.Addr.Compare)
	return dropped, k.deriveZoneAddrs(held, all)
}

// deriveZoneAddrs sets zone_addr for the addresses in changed from held
// (member_addr as it is now): gone with the last holder; kept when its
// zone still holds it; else the zone of the holder with the lowest cgroup
// id.
func (k *Kernel) deriveZoneAddrs(held map[rauhaMemberAddrKey]uint32, changed map[rauhaAddrKey]bool) error {
	var errs []error
	for ak := range changed {
		zones := heldBy(held, ak)
		var cur uint32
		err := k.maps.ZoneAddr.Lookup(ak, &cur)
		switch {
		case err != nil && !errors.Is(err, ebpf.ErrKeyNotExist):
			errs = append(errs, fmt.Errorf("look up address %v: %w", keyAddr(ak.Addr), err))
		case len(zones) == 0:
			errs = append(errs, deleteIfPresent(k.maps.ZoneAddr, ak))
		case err == nil && slices.Contains(zones, cur):
		default:
			if err := k.maps.ZoneAddr.Update(ak, zones[0], ebpf.UpdateAny); err != nil {
				errs = append(errs, fmt.Errorf("register address %v in zone %d (zone_addr full?): %w", keyAddr(ak.Addr), zones[0], err))
			}
		}
	}
	return errors.Join(errs...)
}

// heldBy lists the zones of the members holding ak, ordered by cgroup id.
func heldBy(held map[rauhaMemberAddrKey]uint32, ak rauhaAddrKey) []uint32 {
	type holder struct {
		cgid uint64
		zone uint32
	}
	var hs []holder
	for mk, z := range held {
		if mk.Addr == ak.Addr {
			hs = append(hs, holder{mk.Cgid, z})
		}
	}
	slices.SortFunc(hs, func(a, b holder) int { return cmp.Compare(a.cgid, b.cgid) })
	out := make([]uint32, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.zone)
	}
	return out
}

func (k *Kernel) memberAddrEntries() (map[rauhaMemberAddrKey]uint32, error) {
	out := map[rauhaMemberAddrKey]uint32{}
	err := eachHashEntry(k.maps.MemberAddr, func(mk *rauhaMemberAddrKey, z *uint32) { out[*mk] = *z })
	if err != nil {
		return nil, fmt.Errorf("list member addresses: %w", err)
	}
	return out, nil
}

func (k *Kernel) zoneAddrEntries() (map[rauhaAddrKey]uint32, error) {
	out := map[rauhaAddrKey]uint32{}
	err := eachHashEntry(k.maps.ZoneAddr, func(ak *rauhaAddrKey, z *uint32) { out[*ak] = *z })
	if err != nil {
		return nil, fmt.Errorf("list zone addresses: %w", err)
	}
	return out, nil
}

// MemberAddrs returns the addresses each member registered, sorted.
func (k *Kernel) MemberAddrs() (map[uint64][]netip.Addr, error) {
	held, err := k.memberAddrEntries()
	if err != nil {
		return nil, err
	}
	out := map[uint64][]netip.Addr{}
	for mk := range held {
		out[mk.Cgid] = append(out[mk.Cgid], keyAddr(mk.Addr))
	}
	for _, as := range out {
		slices.SortFunc(as, netip.Addr.Compare)
	}
	return out, nil
}

// AddrZones returns the zone each registered address belongs to, as the
// packet programs see it.
func (k *Kernel) AddrZones() (map[netip.Addr]uint32, error) {
	zones, err := k.zoneAddrEntries()
	if err != nil {
		return nil, err
	}
	out := make(map[netip.Addr]uint32, len(zones))
	for ak, z := range zones {
		out[keyAddr(ak.Addr)] = z
	}
	return out, nil
}
