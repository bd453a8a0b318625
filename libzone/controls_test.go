package libzone

import (
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

func TestCgroupEscapeRoutes(t *testing.T) {
	var st unix.Statfs_t
	hierarchy := "/sys/fs/cgroup/unified"
	if unix.Statfs(hierarchy, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		hierarchy = "/sys/fs/cgroup"
		if unix.Statfs(hierarchy, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			t.Skip("no cgroup2 hierarchy at /sys/fs/cgroup/unified or /sys/fs/cgroup")
		}
	}
	bind := func(src string, flags int) *configs.Mount {
		return &configs.Mount{Source: src, Destination: "/mnt/x", Device: "bind", Flags: unix.MS_BIND | flags}
	}
	caps := func(c ...string) *configs.Capabilities { return &configs.Capabilities{Bounding: c} }
	cgroupNS := configs.Namespaces{{Type: configs.NEWCGROUP}}
	for _, tc := range []struct {
		name    string
		cfg     configs.Config
		allowed *[]string
		want    string // substring of the only route, "" for none
	}{
		{"writable bind of the hierarchy", configs.Config{Mounts: []*configs.Mount{bind(hierarchy, 0)}}, nil, "writable mount of the cgroup hierarchy"},
		{"read-only bind of the hierarchy", configs.Config{Mounts: []*configs.Mount{bind(hierarchy, unix.MS_RDONLY)}}, nil, ""},
		{"writable bind of something else", configs.Config{Mounts: []*configs.Mount{bind(t.TempDir(), 0)}}, nil, ""},
		{"libcontainer's own cgroup mount", configs.Config{Mounts: []*configs.Mount{{Source: "cgroup", Destination: "/sys/fs/cgroup", Device: "cgroup"}}}, nil, ""},
		{"CAP_SYS_ADMIN in the host cgroup namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN")}, nil, "CAP_SYS_ADMIN"},
		{"CAP_SYS_ADMIN in a cgroup namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: cgroupNS}, nil, ""},
		{"CAP_SYS_ADMIN the policy drops", configs.Config{Capabilities: caps("CAP_SYS_ADMIN", "CAP_KILL")}, zone.List("kill"), ""},
		{"CAP_SYS_ADMIN the policy keeps", configs.Config{Capabilities: caps("CAP_SYS_ADMIN")}, zone.List("sys_admin"), "CAP_SYS_ADMIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &zone.Policy{Capabilities: zone.Capabilities{Allowed: tc.allowed}}
			routes := cgroupEscapeRoutes(&tc.cfg, p)
			switch {
			case tc.want == "" && len(routes) != 0:
				t.Fatalf("want no route, got %q", routes)
			case tc.want != "" && (len(routes) != 1 || !strings.Contains(routes[0], tc.want)):
				t.Fatalf("want one route containing %q, got %q", tc.want, routes)
			}
		})
	}
}

func TestLimitCapabilitiesNetRaw(t *testing.T) {
	caps := func() *libcontainer.Process {
		set := []string{"CAP_NET_RAW", "CAP_KILL"}
		return &libcontainer.Process{Capabilities: &configs.Capabilities{
			Bounding: set, Effective: set, Permitted: set, Inheritable: set, Ambient: set,
		}}
	}
	none, raw := []string{}, []string{"NET_RAW"}
	for _, tc := range []struct {
		name    string
		policy  zone.Policy
		wantRaw bool
	}{
		{"egress unrestricted", zone.Policy{}, true},
		{"egress restricted", zone.Policy{Network: zone.Network{AllowedEgress: &none}}, false},
		{"egress restricted, audit", zone.Policy{Zone: zone.ZoneSettings{Mode: zone.ModeAudit}, Network: zone.Network{AllowedEgress: &none}}, true},
		{"egress restricted, listed", zone.Policy{Network: zone.Network{AllowedEgress: &none}, Capabilities: zone.Capabilities{Allowed: &raw}}, true},
	} {
		p := caps()
		limitCapabilities(p, &tc.policy)
		c := p.Capabilities
		for _, set := range [][]string{c.Bounding, c.Effective, c.Permitted, c.Inheritable, c.Ambient} {
			if slices.Contains(set, "CAP_NET_RAW") != tc.wantRaw {
				t.Errorf("%s: capability set %v, want CAP_NET_RAW: %v", tc.name, set, tc.wantRaw)
			}
		}
		if tc.policy.Capabilities.Allowed == nil {
			if !slices.Contains(c.Bounding, "CAP_KILL") {
				t.Errorf("%s: CAP_KILL dropped: %v", tc.name, c.Bounding)
			}
		}
	}
}
