package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// netChanged bumps net_gen: the packet programs keep each cgroup's zone
// and its last allowed destination (verdict_slots) for as long as net_gen
// holds the generation they were read at, so every change of what they
// were read from (members, policies, allow-lists, peers, addresses,
// member_netns, zones_in_use, the programs) must end with a bump, also a
// change that failed half-way. The caller holds the pin-directory lock,
// which keeps two bumps from writing the same generation. BPF_F_LOCK
// makes the write a release of net_gen's lock, which the programs take to
// read it before they walk: one that reads the new generation sees the
// changes made before it.
func (k *Kernel) netChanged() error {
	var v rauhaGenValue
	if err := k.maps.NetGen.LookupWithFlags(uint32(0), &v, ebpf.LookupLock); err != nil {
		return fmt.Errorf("read net_gen: %w", err)
	}
	v.Gen++
	if err := k.maps.NetGen.Update(uint32(0), &v, ebpf.UpdateLock); err != nil {
		return fmt.Errorf("bump net_gen (sockets may keep verdicts of the old state until it is bumped): %w", err)
	}
	return nil
}
