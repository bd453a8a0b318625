package libzone

import (
	"slices"

	"github.com/rauha-runtime/rauha/zone"
)

// nothingPath is an exec allow-list entry that matches no file. Meet needs
// it because an empty exec allow-list means "any binary", so the meet of two
// disjoint allow-lists cannot be written as an empty list.
const nothingPath = "/.rauha-allows-nothing"

// meet returns a policy at least as strict as both a and b: everything it
// allows, both allow. A zone update pushes the meet of the old and the new
// policy to the kernel before it stores the new one, so that whenever a
// crash interrupts the update, the kernel holds a policy no looser than
// the stored one.
func meet(a, b *zone.Policy) *zone.Policy {
	a, b = a.Canonical(), b.Canonical()
	m := b.Clone()
	if a.Zone.Mode == zone.ModeEnforce {
		m.Zone.Mode = zone.ModeEnforce
	}
	if a.Zone.Admission == zone.AdmissionStrict {
		m.Zone.Admission = zone.AdmissionStrict
	}
	m.Capabilities.Allowed = meetAllowList(a.Capabilities.Allowed, b.Capabilities.Allowed)
	m.Filesystem.WritablePaths = meetAllowList(a.Filesystem.WritablePaths, b.Filesystem.WritablePaths)
	m.Filesystem.ReadOnly = union(a.Filesystem.ReadOnly, b.Filesystem.ReadOnly)
	m.Filesystem.Deny = union(a.Filesystem.Deny, b.Filesystem.Deny)
	switch {
	case len(a.Exec.Allow) == 0:
	case len(b.Exec.Allow) == 0:
		m.Exec.Allow = a.Exec.Allow
	default:
		m.Exec.Allow = intersect(a.Exec.Allow, b.Exec.Allow)
		if len(m.Exec.Allow) == 0 {
			m.Exec.Allow = []string{nothingPath}
		}
	}
	m.Exec.Deny = union(a.Exec.Deny, b.Exec.Deny)
	m.Network.AllowedEgress = meetAllowList(a.Network.AllowedEgress, b.Network.AllowedEgress)
	m.Network.DeniedEgress = union(a.Network.DeniedEgress, b.Network.DeniedEgress)
	m.Network.AllowedZones = meetAllowList(a.Network.AllowedZones, b.Network.AllowedZones)
	m.Signals.AllowedZones = intersect(a.Signals.AllowedZones, b.Signals.AllowedZones)
	m.Resources.CPUShares = minSet(a.Resources.CPUShares, b.Resources.CPUShares)
	m.Resources.MemoryLimit = minSet(a.Resources.MemoryLimit, b.Resources.MemoryLimit)
	m.Resources.IOWeight = minSet(a.Resources.IOWeight, b.Resources.IOWeight)
	m.Resources.PidsMax = minSet(a.Resources.PidsMax, b.Resources.PidsMax)
	m.Devices.Allowed = meetAllowList(a.Devices.Allowed, b.Devices.Allowed)
	m.Syscalls.Deny = union(a.Syscalls.Deny, b.Syscalls.Deny)
	return m.Canonical()
}

// meetAllowList meets two optional allow-lists: absent allows everything.
func meetAllowList(a, b *[]string) *[]string {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return zone.List(intersect(*a, *b)...)
}

func intersect(a, b []string) []string {
	var out []string
	for _, s := range a {
		if slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// minSet is the smaller of two limits where 0 means "no limit".
func minSet[T ~int64](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
