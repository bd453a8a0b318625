package libzone

import (
	"slices"
	"testing"

	"github.com/rauha-runtime/rauha/zone"
)

func mustParse(t *testing.T, text string) *zone.Policy {
	t.Helper()
	p, err := zone.ParsePolicy("test.toml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMeetIsStricterThanBoth(t *testing.T) {
	loose := mustParse(t, `
[zone]
mode = "audit"
admission = "audit"
[capabilities]
allowed = ["CHOWN", "KILL"]
[exec]
allow = ["/bin"]
[network]
allowed_egress = ["10.0.0.0/8:443", "127.0.0.1"]
denied_egress = ["169.254.169.254"]
[resources]
pids_max = 100
`)
	strict := mustParse(t, `
[zone]
mode = "enforce"
admission = "strict"
[capabilities]
allowed = ["KILL"]
[filesystem]
deny = ["/etc/shadow"]
[exec]
allow = ["/usr/bin"]
[network]
allowed_egress = ["127.0.0.1"]
denied_egress = ["10.1.0.0/16:443", "169.254.169.254/32"]
[resources]
pids_max = 50
memory_limit = "64M"
`)
	for _, m := range []*zone.Policy{meet(loose, strict), meet(strict, loose)} {
		if m.Zone.Mode != zone.ModeEnforce || m.Zone.Admission != zone.AdmissionStrict {
			t.Errorf("mode/admission = %s/%s, want enforce/strict", m.Zone.Mode, m.Zone.Admission)
		}
		if got := *m.Capabilities.Allowed; !slices.Equal(got, []string{"CAP_KILL"}) {
			t.Errorf("capabilities = %v, want [CAP_KILL]", got)
		}
		if !slices.Equal(m.Filesystem.Deny, []string{"/etc/shadow"}) {
			t.Errorf("deny = %v", m.Filesystem.Deny)
		}
		if !slices.Equal(m.Exec.Allow, []string{nothingPath}) {
			t.Errorf("disjoint exec allow-lists must meet in nothing, got %v", m.Exec.Allow)
		}
		if got := *m.Network.AllowedEgress; len(got) != 1 {
			t.Errorf("egress = %v, want only the loopback rule", got)
		}
		if want := []string{"10.1.0.0/16:443", "169.254.169.254/32"}; !slices.Equal(m.Network.DeniedEgress, want) {
			t.Errorf("denied egress = %v, want the union %v", m.Network.DeniedEgress, want)
		}
		if m.Resources.PidsMax != 50 || m.Resources.MemoryLimit != 64<<20 {
			t.Errorf("resources = %+v", m.Resources)
		}
		if err := m.Validate(); err != nil {
			t.Errorf("meet is not a valid policy: %v", err)
		}
	}
}

func TestMeetAbsentListsAllowEverything(t *testing.T) {
	none := mustParse(t, "[zone]\nmode = \"enforce\"\n")
	empty := mustParse(t, "[network]\nallowed_egress = []\n[capabilities]\nallowed = []\n")
	m := meet(none, empty)
	if m.Network.AllowedEgress == nil || len(*m.Network.AllowedEgress) != 0 {
		t.Errorf("absent ∧ empty egress must be empty (no egress), got %v", m.Network.AllowedEgress)
	}
	if m.Capabilities.Allowed == nil || len(*m.Capabilities.Allowed) != 0 {
		t.Errorf("absent ∧ empty capabilities must be empty, got %v", m.Capabilities.Allowed)
	}
	if m2 := meet(none, none); m2.Network.AllowedEgress != nil {
		t.Errorf("absent ∧ absent must stay absent, got %v", *m2.Network.AllowedEgress)
	}
}
