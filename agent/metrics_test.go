package agent

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rauha-runtime/rauha/libzone"
	"github.com/rauha-runtime/rauha/zone"
)

func TestCollectorReadsTheRootsZones(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: installs the kernel programs of a test root")
	}
	e, err := libzone.New(libzone.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := zone.Preset(zone.PresetStrict)
	if err != nil {
		t.Fatal(err)
	}
	p.Zone.Admission = zone.AdmissionAudit
	if _, err := e.CreateZone("metrics", p, "preset:strict"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.DeleteZone("metrics", false); err != nil {
			t.Errorf("remove the test zone and its kernel programs: %v", err)
		}
	})
	c := NewCollector([]*libzone.Engine{e})
	want := `# HELP rauha_zone_members Containers of the zone on this node.
# TYPE rauha_zone_members gauge
rauha_zone_members{root="` + e.Root() + `",zone="metrics"} 0
# HELP rauha_scrape_errors Roots or zones whose counters could not be read at this scrape.
# TYPE rauha_scrape_errors gauge
rauha_scrape_errors{root="` + e.Root() + `"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "rauha_zone_members", "rauha_scrape_errors"); err != nil {
		t.Error(err)
	}
	st, err := e.ZoneStats("metrics")
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "rauha_zone_denies_total"); n != len(st.Controls) || n == 0 {
		t.Errorf("%d rauha_zone_denies_total series, want one per control of zone stats (%d)", n, len(st.Controls))
	}
}
