package libzone

import (
	"slices"
	"testing"

	"github.com/rauha-runtime/rauha/zone"
)

// A zone created after the zones that allow it must reach their kernel
// policies: both allow-lists that name zones count, and a zone listing
// itself is not pushed twice.
func TestZonesListing(t *testing.T) {
	zs := []zone.Zone{
		{Name: "net", Policy: zone.Policy{Network: zone.Network{AllowedZones: zone.List("db")}}},
		{Name: "sig", Policy: zone.Policy{Signals: zone.Signals{AllowedZones: []string{"db"}}}},
		{Name: "other", Policy: zone.Policy{Network: zone.Network{AllowedZones: zone.List("web")}}},
		{Name: "none"},
		{Name: "db", Policy: zone.Policy{Network: zone.Network{AllowedZones: zone.List("db")}}},
	}
	if got := zonesListing(zs, "db"); !slices.Equal(got, []string{"net", "sig"}) {
		t.Errorf("zones listing db = %v, want [net sig]", got)
	}
	if got := zonesListing(zs, "nobody"); len(got) != 0 {
		t.Errorf("zones listing nobody = %v, want none", got)
	}
}
