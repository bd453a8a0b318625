package bpf

import (
	"net/netip"
	"testing"
)

func TestPolicyDiff(t *testing.T) {
	stored := ZonePolicy{
		Mode:             ModeEnforce,
		EgressRestricted: true,
		Egress:           []EgressRule{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 443}},
		FileDenies:       []FileDeny{{Dev: 19, Ino: 814, Mask: 4}, {Dev: 19, Ino: 817, Mask: 4}},
	}
	if d := stored.Diff(stored); d != "" {
		t.Fatalf("a policy differs from itself: %q", d)
	}
	kernel := stored
	kernel.EgressRestricted = false
	kernel.FileDenies = []FileDeny{{Dev: 19, Ino: 817, Mask: 4}, {Dev: 20, Ino: 5, Mask: 4}}
	want := "EgressRestricted false, not true; FileDenies also {Dev:20 Ino:5 Mask:4}; FileDenies lacks {Dev:19 Ino:814 Mask:4}"
	if d := kernel.Diff(stored); d != want {
		t.Fatalf("diff:\n got %q\nwant %q", d, want)
	}
}
