package libzone

import (
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
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
