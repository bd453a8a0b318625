package libzone

import (
	"slices"
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

func TestBPFDeniedUnlessKept(t *testing.T) {
	caps := func(c ...string) *configs.Capabilities { return &configs.Capabilities{Bounding: c} }
	for _, tc := range []struct {
		name    string
		caps    *configs.Capabilities
		allowed *[]string
		seccomp *configs.Seccomp
		denied  bool
	}{
		{"no capabilities", caps(), nil, nil, true},
		{"no capability sets at all", nil, nil, nil, true},
		{"CAP_BPF, no policy list", caps("CAP_BPF"), nil, nil, false},
		{"CAP_SYS_ADMIN, no policy list", caps("CAP_SYS_ADMIN"), nil, nil, false},
		{"CAP_BPF the policy drops", caps("CAP_BPF", "CAP_KILL"), zone.List("KILL"), nil, true},
		{"CAP_SYS_ADMIN the policy keeps", caps("CAP_SYS_ADMIN"), zone.List("SYS_ADMIN"), nil, false},
		{"the policy lists BPF the container does not have", caps("CAP_KILL"), zone.List("BPF", "KILL"), nil, true},
		{"a profile that allows bpf", caps(), nil, &configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{{Name: "bpf", Action: configs.Allow}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &configs.Config{Capabilities: tc.caps, Seccomp: tc.seccomp, Cgroups: &cgroups.Cgroup{Resources: &cgroups.Resources{}}}
			p := &zone.Policy{Capabilities: zone.Capabilities{Allowed: tc.allowed}}
			applyConfigControls(cfg, p)
			var rules []*configs.Syscall
			if cfg.Seccomp != nil {
				for _, sc := range cfg.Seccomp.Syscalls {
					if sc.Name == "bpf" {
						rules = append(rules, sc)
					}
				}
			}
			denied := len(rules) == 1 && rules[0].Action == configs.Errno && *rules[0].ErrnoRet == uint(unix.EPERM)
			if denied != tc.denied {
				t.Fatalf("want bpf denied %v, got rules %+v", tc.denied, rules)
			}
			if !tc.denied && tc.seccomp == nil && cfg.Seccomp != nil {
				t.Fatalf("a member keeping bpf got a seccomp filter: %+v", cfg.Seccomp)
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
