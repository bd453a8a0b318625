package libzone

import (
	"testing"

	"github.com/opencontainers/cgroups"
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
