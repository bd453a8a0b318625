package libzone

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/landlock"
	"github.com/rauha-runtime/rauha/zone"
)

// cgroup2Hierarchy is where this host mounts cgroup v2, or "" when nowhere
// the tests look.
func cgroup2Hierarchy() string {
	for _, h := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(h, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return h
		}
	}
	return ""
}

func bind(src string, flags int) *configs.Mount {
	return &configs.Mount{Source: src, Destination: "/mnt/x", Device: "bind", Flags: unix.MS_BIND | flags}
}

func caps(c ...string) *configs.Capabilities { return &configs.Capabilities{Bounding: c} }

// fakeTree is a directory whose mount table (as hostMounts reports it) has a
// mount of fstype at tree/sub: the rbind cases do not depend on the host's
// mounts.
func fakeTree(t *testing.T, fstype string) (string, *hostMounts) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, &hostMounts{read: true, mounts: []*mountinfo.Info{
		{Mountpoint: "/elsewhere", FSType: fstype},
		{Mountpoint: filepath.Join(dir, "sub"), FSType: fstype},
	}}
}

func oneRoute(t *testing.T, routes []string, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case want == "" && len(routes) != 0:
		t.Fatalf("want no route, got %q", routes)
	case want != "" && (len(routes) != 1 || !strings.Contains(routes[0], want)):
		t.Fatalf("want one route containing %q, got %q", want, routes)
	}
}

func TestCgroupEscapeRoutes(t *testing.T) {
	hierarchy := cgroup2Hierarchy()
	if hierarchy == "" {
		t.Skip("no cgroup2 hierarchy at /sys/fs/cgroup/unified or /sys/fs/cgroup")
	}
	tree, treeMounts := fakeTree(t, "cgroup2")
	v1Tree, v1Mounts := fakeTree(t, "cgroup")
	rro := func(m *configs.Mount) *configs.Mount {
		m.RecAttr = &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		return m
	}
	mounts := func(m ...*configs.Mount) []*configs.Mount { return m }
	ns := func(types ...configs.NamespaceType) configs.Namespaces {
		var n configs.Namespaces
		for _, t := range types {
			n = append(n, configs.Namespace{Type: t})
		}
		return n
	}
	private := ns(configs.NEWCGROUP, configs.NEWPID, configs.NEWNS)
	denyHandles := &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{{Name: "open_by_handle_at", Action: configs.Errno}}}
	for _, tc := range []struct {
		name    string
		cfg     configs.Config
		h       *hostMounts
		allowed *[]string
		want    string // substring of the only route, "" for none
		v1only  bool   // bpf-lsm on a hybrid host: only the v1 hierarchies are unguarded
	}{
		{"writable bind of the hierarchy", configs.Config{Mounts: mounts(bind(hierarchy, 0))}, nil, nil, "writable mount of the cgroup hierarchy", false},
		{"read-only bind of the hierarchy", configs.Config{Mounts: mounts(bind(hierarchy, unix.MS_RDONLY))}, nil, nil, "", false},
		{"rro bind of the hierarchy", configs.Config{Mounts: mounts(rro(bind(hierarchy, unix.MS_REC)))}, nil, nil, "", false},
		{"writable bind of something else", configs.Config{Mounts: mounts(bind(t.TempDir(), 0))}, nil, nil, "", false},
		{"libcontainer's own cgroup mount", configs.Config{Mounts: mounts(&configs.Mount{Source: "cgroup", Destination: "/sys/fs/cgroup", Device: "cgroup"})}, nil, nil, "", false},
		{"writable rbind holding a cgroup2 mount", configs.Config{Mounts: mounts(bind(tree, unix.MS_REC))}, treeMounts, nil, "writable recursive bind of " + tree + ", which holds the cgroup hierarchy " + tree + "/sub", false},
		{"writable rbind holding a cgroup v1 mount", configs.Config{Mounts: mounts(bind(v1Tree, unix.MS_REC))}, v1Mounts, nil, "writable recursive bind", false},
		{"ro rbind holding a cgroup mount", configs.Config{Mounts: mounts(bind(tree, unix.MS_REC|unix.MS_RDONLY))}, treeMounts, nil, "read-only only at its top", false},
		{"rro rbind holding a cgroup mount", configs.Config{Mounts: mounts(rro(bind(tree, unix.MS_REC|unix.MS_RDONLY)))}, treeMounts, nil, "", false},
		{"writable plain bind of a tree holding a cgroup mount", configs.Config{Mounts: mounts(bind(tree, 0))}, treeMounts, nil, "", false},
		{"writable rbind holding no cgroup mount", configs.Config{Mounts: mounts(bind(tree, unix.MS_REC))}, &hostMounts{read: true}, nil, "", false},
		{"CAP_SYS_ADMIN in the host cgroup namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN")}, nil, nil, "without a cgroup namespace", false},
		{"CAP_SYS_ADMIN joining another cgroup namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: configs.Namespaces{{Type: configs.NEWCGROUP, Path: "/proc/1/ns/cgroup"}, {Type: configs.NEWPID}}}, nil, nil, "without a cgroup namespace", false},
		{"CAP_SYS_ADMIN in a cgroup and a pid namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: private}, nil, nil, "", false},
		{"CAP_SYS_ADMIN sharing the host pid namespace, cgroup v1 unguarded", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: ns(configs.NEWCGROUP)}, nil, nil, "/proc/PID/ns/cgroup", true},
		{"CAP_SYS_ADMIN sharing the host pid namespace, a Landlock domain for path rules", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: ns(configs.NEWCGROUP)}, nil, nil, sharedPidRoute(landlock.ABI() < 1), false},
		{"CAP_SYS_ADMIN the policy drops", configs.Config{Capabilities: caps("CAP_SYS_ADMIN", "CAP_KILL")}, nil, zone.List("kill"), "", false},
		{"CAP_SYS_ADMIN the policy keeps", configs.Config{Capabilities: caps("CAP_SYS_ADMIN")}, nil, zone.List("sys_admin"), "CAP_SYS_ADMIN", false},
		{"CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH in a cgroup namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"), Namespaces: private}, nil, nil, "open_by_handle_at", false},
		{"the same with open_by_handle_at denied", configs.Config{Capabilities: caps("CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"), Namespaces: private, Seccomp: denyHandles}, nil, nil, "", false},
		{"the same, the policy dropping CAP_DAC_READ_SEARCH", configs.Config{Capabilities: caps("CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"), Namespaces: private}, nil, zone.List("sys_admin"), "", false},
		{"CAP_SYS_ADMIN with a read-only bind of the hierarchy", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: private, Mounts: mounts(bind(hierarchy, unix.MS_RDONLY))}, nil, nil, "remount", false},
		{"CAP_SYS_ADMIN with an rro rbind holding a cgroup mount", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: private, Mounts: mounts(rro(bind(tree, unix.MS_REC|unix.MS_RDONLY)))}, treeMounts, nil, "remount", false},
		{"CAP_SYS_ADMIN with a read-only bind, in a user namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: append(ns(configs.NEWUSER), private...), Mounts: mounts(bind(hierarchy, unix.MS_RDONLY))}, nil, nil, "", false},
		{"guarded cgroup2: writable bind of the hierarchy", configs.Config{Mounts: mounts(bind(hierarchy, 0))}, nil, nil, "", true},
		{"guarded cgroup2: writable rbind holding a cgroup2 mount", configs.Config{Mounts: mounts(bind(tree, unix.MS_REC))}, treeMounts, nil, "", true},
		{"guarded cgroup2: writable rbind holding a cgroup v1 mount", configs.Config{Mounts: mounts(bind(v1Tree, unix.MS_REC))}, v1Mounts, nil, "writable recursive bind", true},
		{"guarded cgroup2: CAP_SYS_ADMIN in the host cgroup namespace", configs.Config{Capabilities: caps("CAP_SYS_ADMIN")}, nil, nil, "without a cgroup namespace", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if h == nil {
				h = &hostMounts{read: true}
			}
			p := &zone.Policy{Capabilities: zone.Capabilities{Allowed: tc.allowed}, Filesystem: zone.Filesystem{Deny: []string{"/etc/shadow"}}}
			unguarded := cgroupFSTypes
			if tc.v1only {
				unguarded = []string{"cgroup"}
			}
			routes, err := cgroupEscapeRoutes(&tc.cfg, p, scanBinds(&tc.cfg, h), unguarded)
			oneRoute(t, routes, err, tc.want)
		})
	}
}

// sharedPidRoute is the route expected from CAP_SYS_ADMIN in a shared pid
// namespace: open when no Landlock domain holds the member.
func sharedPidRoute(open bool) string {
	if open {
		return "/proc/PID/ns/cgroup"
	}
	return ""
}

// TestCloseEscapeRoutes: what closeEscapeRoutes changes leaves no route, and
// it changes nothing else.
func TestCloseEscapeRoutes(t *testing.T) {
	tree, treeMounts := fakeTree(t, "cgroup2")
	p := &zone.Policy{}

	roTree := bind(tree, unix.MS_REC|unix.MS_RDONLY)
	rwTree := bind(tree, unix.MS_REC)
	plain := bind(t.TempDir(), unix.MS_REC|unix.MS_RDONLY)
	cfg := &configs.Config{Mounts: []*configs.Mount{roTree, rwTree, plain}}
	if err := closeEscapeRoutes(cfg, p, cgroupFSTypes, scanBinds(cfg, treeMounts)); err != nil {
		t.Fatal(err)
	}
	if roTree.RecAttr == nil || roTree.RecAttr.Attr_set&unix.MOUNT_ATTR_RDONLY == 0 {
		t.Errorf("a read-only rbind over a cgroup mount was not made read-only all the way down: %+v", roTree.RecAttr)
	}
	if rwTree.RecAttr != nil || plain.RecAttr != nil {
		t.Errorf("a writable rbind or one over no cgroup mount was changed: %+v, %+v", rwTree.RecAttr, plain.RecAttr)
	}
	routes, err := cgroupEscapeRoutes(cfg, p, scanBinds(cfg, treeMounts), cgroupFSTypes)
	oneRoute(t, routes, err, "writable recursive bind")

	private := configs.Namespaces{{Type: configs.NEWCGROUP}, {Type: configs.NEWPID}}
	handles := &configs.Config{Capabilities: caps("CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"), Namespaces: private}
	if err := closeEscapeRoutes(handles, p, nil, scanBinds(handles, treeMounts)); err != nil {
		t.Fatal(err)
	}
	if handles.Seccomp != nil {
		t.Errorf("with the bpf-lsm guard, open_by_handle_at was denied anyway")
	}
	if err := closeEscapeRoutes(handles, p, cgroupFSTypes, scanBinds(handles, treeMounts)); err != nil {
		t.Fatal(err)
	}
	if !seccompDenies(handles.Seccomp, "open_by_handle_at") {
		t.Errorf("open_by_handle_at stays allowed for a member with both capabilities in a cgroup namespace")
	}
	routes, err = cgroupEscapeRoutes(handles, p, scanBinds(handles, treeMounts), cgroupFSTypes)
	oneRoute(t, routes, err, "")

	one := &configs.Config{Capabilities: caps("CAP_SYS_ADMIN"), Namespaces: private}
	if err := closeEscapeRoutes(one, p, cgroupFSTypes, scanBinds(one, treeMounts)); err != nil {
		t.Fatal(err)
	}
	if one.Seccomp != nil {
		t.Errorf("open_by_handle_at was denied to a member without CAP_DAC_READ_SEARCH")
	}
}

func TestSeccompDenies(t *testing.T) {
	errno := configs.Errno
	for _, tc := range []struct {
		name string
		s    *configs.Seccomp
		want bool
	}{
		{"no profile", nil, false},
		{"default allow", &configs.Seccomp{DefaultAction: configs.Allow}, false},
		{"default errno", &configs.Seccomp{DefaultAction: configs.Errno}, true},
		{"default errno, allowed by a rule", &configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{{Name: "open_by_handle_at", Action: configs.Allow}}}, false},
		{"errno rule", &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{{Name: "open_by_handle_at", Action: errno}}}, true},
		{"errno rule for some arguments only", &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{{Name: "open_by_handle_at", Action: errno, Args: []*configs.Arg{{Index: 2, Value: 0, Op: configs.EqualTo}}}}}, false},
		{"a rule for another syscall", &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{{Name: "openat", Action: errno}}}, false},
	} {
		if got := seccompDenies(tc.s, "open_by_handle_at"); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEnforcementRoutes(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "run", "rauha")
	if err := os.MkdirAll(filepath.Join(root, "ctr"), 0o700); err != nil {
		t.Fatal(err)
	}
	tree, bpfMounts := fakeTree(t, "bpf")
	procTree, procMounts := fakeTree(t, "proc")
	for _, tc := range []struct {
		name string
		m    *configs.Mount
		h    *hostMounts
		want string
	}{
		{"bind of the state root", bind(root, unix.MS_RDONLY), nil, "state root " + root},
		{"bind inside the state root", bind(filepath.Join(root, "ctr"), 0), nil, "state root"},
		{"plain bind of a directory holding the state root", bind(filepath.Join(tmp, "run"), unix.MS_RDONLY), nil, "state root"},
		{"rbind of a directory two levels above", bind(tmp, unix.MS_REC), nil, "state root"},
		{"bind of something else", bind(t.TempDir(), 0), nil, ""},
		{"a name that only starts like the root", bind(mkdir(t, root+"-other"), 0), nil, ""},
		{"rbind holding a bpf filesystem", bind(tree, unix.MS_REC|unix.MS_RDONLY), bpfMounts, "holds the bpf filesystem " + tree + "/sub"},
		{"plain bind of a tree holding a bpf filesystem", bind(tree, unix.MS_RDONLY), bpfMounts, ""},
		{"not a bind", &configs.Mount{Source: "tmpfs", Destination: "/run", Device: "tmpfs"}, nil, ""},
		{"libcontainer's own proc mount", &configs.Mount{Source: "proc", Destination: "/proc", Device: "proc"}, nil, ""},
		{"bind of the host's /proc", bind("/proc", unix.MS_REC|unix.MS_RDONLY), nil, "procfs of the host"},
		{"bind of the procfs through a process root", bind("/proc/self/root/proc", unix.MS_RDONLY), nil, "procfs of the host"},
		{"rbind holding a procfs", bind(procTree, unix.MS_REC), procMounts, "procfs of the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if h == nil {
				h = &hostMounts{read: true}
			}
			routes, err := enforcementRoutes(scanBinds(&configs.Config{Mounts: []*configs.Mount{tc.m}}, h), root)
			oneRoute(t, routes, err, tc.want)
		})
	}
	t.Run("rbind of a file leaves the mount table unread", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "hostname")
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		unreadable := &hostMounts{read: true, err: errors.New("mount table read")}
		cfg := &configs.Config{Mounts: []*configs.Mount{bind(f, unix.MS_REC|unix.MS_RDONLY)}}
		routes, err := enforcementRoutes(scanBinds(cfg, unreadable), root)
		oneRoute(t, routes, err, "")
		routes, err = cgroupEscapeRoutes(cfg, &zone.Policy{}, scanBinds(cfg, unreadable), cgroupFSTypes)
		oneRoute(t, routes, err, "")
	})
	t.Run("bind of a bpf filesystem", func(t *testing.T) {
		var st unix.Statfs_t
		if unix.Statfs("/sys/fs/bpf", &st) != nil || st.Type != unix.BPF_FS_MAGIC {
			t.Skip("no bpf filesystem at /sys/fs/bpf")
		}
		routes, err := enforcementRoutes(scanBinds(&configs.Config{Mounts: []*configs.Mount{bind("/sys/fs/bpf", unix.MS_RDONLY)}}, &hostMounts{read: true}), root)
		oneRoute(t, routes, err, "a bpf filesystem")
	})
}

func mkdir(t *testing.T, dir string) string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
