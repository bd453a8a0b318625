package libzone

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

func execTestConfig(t *testing.T) *configs.Config {
	root := t.TempDir()
	for _, d := range []string{"tmp", "srv/data", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink on the rootfs must resolve inside it, not on the host.
	if err := os.Symlink("/srv/data", filepath.Join(root, "data")); err != nil {
		t.Fatal(err)
	}
	return &configs.Config{
		Rootfs: root,
		Mounts: []*configs.Mount{
			{Device: "proc", Destination: "/proc"},
			{Device: "tmpfs", Destination: "/dev", Flags: unix.MS_NOSUID},
			{Device: "tmpfs", Destination: "/dev/shm", Flags: unix.MS_NOEXEC},
			{Device: "sysfs", Destination: "/sys", Flags: unix.MS_RDONLY},
			{Device: "bind", Source: "/host/vol", Destination: "/srv/data/vol", Flags: unix.MS_BIND},
			{Device: "bind", Source: "/host/ro", Destination: "/srv/ro", Flags: unix.MS_BIND | unix.MS_RDONLY},
		},
		Devices:    []*config.Device{{Path: "/dev/null"}},
		Namespaces: configs.Namespaces{{Type: configs.NEWPID}, {Type: configs.NEWNS}},
	}
}

func execPolicy(writable ...string) *zone.Policy {
	p := &zone.Policy{Zone: zone.ZoneSettings{Mode: zone.ModeEnforce}, Exec: zone.Exec{Deny: []string{"/bin/x"}}}
	if writable != nil {
		p.Filesystem.WritablePaths = &writable
	}
	return p
}

func TestCloseExecRoutesWritablePaths(t *testing.T) {
	cfg := execTestConfig(t)
	p := execPolicy("/tmp", "/dev/null", "/dev/shm/sub", "/data", "/missing")
	if routes := execRoutes(cfg, p); len(routes) != 0 {
		t.Fatalf("routes %v, want none", routes)
	}
	if err := closeExecRoutes(cfg, p); err != nil {
		t.Fatal(err)
	}
	byDest := map[string]*configs.Mount{}
	for _, m := range cfg.Mounts {
		byDest[m.Destination] = m
	}
	// /data is a symlink to /srv/data on the rootfs: the bind mount goes
	// where it resolves, and the volume below it counts as writable too.
	for _, dst := range []string{"/tmp", "/srv/data", "/dev/shm", "/srv/data/vol"} {
		if m := byDest[dst]; m == nil || m.Flags&unix.MS_NOEXEC == 0 {
			t.Errorf("%s: %+v, want a noexec mount", dst, m)
		}
	}
	if m := byDest["/srv/data"]; m.Source != filepath.Join(cfg.Rootfs, "srv/data") || m.Flags&unix.MS_BIND == 0 {
		t.Errorf("/srv/data bound from %q (flags %#x), want the rootfs's srv/data", m.Source, m.Flags)
	}
	for _, dst := range []string{"/dev", "/proc", "/sys", "/srv/ro"} {
		if byDest[dst].Flags&unix.MS_NOEXEC != 0 {
			t.Errorf("%s made noexec: nothing the workload writes is there", dst)
		}
	}
	if _, ok := byDest["/missing"]; ok {
		t.Error("a missing writable path got a bind mount")
	}
	// The bind mounts come before the config's own (a mount below them
	// stays on top).
	if cfg.Mounts[0].Destination != "/tmp" || cfg.Mounts[1].Destination != "/srv/data" {
		t.Errorf("bind mounts not first: %s, %s", cfg.Mounts[0].Destination, cfg.Mounts[1].Destination)
	}
	if memfdBySysctl(cfg) == memfdDenied(cfg) {
		t.Errorf("memfd: sysctl %v, seccomp deny %v: want exactly one", memfdBySysctl(cfg), memfdDenied(cfg))
	}
}

func TestCloseExecRoutesSharedPidDeniesMemfd(t *testing.T) {
	cfg := execTestConfig(t)
	cfg.Namespaces = configs.Namespaces{{Type: configs.NEWNS}}
	if err := closeExecRoutes(cfg, execPolicy("/tmp")); err != nil {
		t.Fatal(err)
	}
	if memfdBySysctl(cfg) || !memfdDenied(cfg) {
		t.Error("a shared pid namespace must get memfd_create denied by seccomp")
	}
}

func TestExecRoutesOpen(t *testing.T) {
	cfg := execTestConfig(t)
	if r := execRoutes(cfg, execPolicy()); len(r) != 1 || !strings.Contains(r[0], "root file system is writable") {
		t.Errorf("writable root without writable_paths: %v", r)
	}
	cfg.Readonlyfs = true
	if r := execRoutes(cfg, execPolicy()); len(r) != 0 {
		t.Errorf("read-only root: %v, want no route", r)
	}
	want := []string{"/dev", "/dev/shm", "/srv/data/vol"}
	if got := noexecPaths(cfg, execPolicy()); !slices.Equal(got, want) {
		t.Errorf("noexec paths of a read-only root %v, want %v", got, want)
	}
	cfg.Capabilities = &configs.Capabilities{Bounding: []string{"CAP_SYS_ADMIN"}}
	if r := execRoutes(cfg, execPolicy()); len(r) != 1 || !strings.Contains(r[0], "CAP_SYS_ADMIN") {
		t.Errorf("CAP_SYS_ADMIN: %v", r)
	}
	audit := execPolicy()
	audit.Zone.Mode = zone.ModeAudit
	if r := execRoutes(cfg, audit); r != nil {
		t.Errorf("audit mode denies nothing and closes nothing: %v", r)
	}
	if r := execRoutes(cfg, &zone.Policy{}); r != nil {
		t.Errorf("no exec rules: %v", r)
	}
}

func TestContainingMount(t *testing.T) {
	mounts := []*mountinfo.Info{
		{Mountpoint: "/", Options: "rw"},
		{Mountpoint: "/tmp", Options: "rw"},
		{Mountpoint: "/tmp", Options: "rw,noexec"},
		{Mountpoint: "/tmpx", Options: "rw"},
	}
	for p, want := range map[string]bool{"/tmp": true, "/tmp/a/b": true, "/tmpx/a": false, "/etc": false} {
		if got := mountHas(containing(mounts, p), "noexec"); got != want {
			t.Errorf("%s: noexec %v, want %v", p, got, want)
		}
	}
}

func TestLoaderRoutes(t *testing.T) {
	cfg := execTestConfig(t)
	gnu := filepath.Join(cfg.Rootfs, "lib/x86_64-linux-gnu")
	if err := os.MkdirAll(gnu, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gnu, "ld-linux-x86-64.so.2"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Rootfs, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", filepath.Join(cfg.Rootfs, "lib64/ld-linux-x86-64.so.2")); err != nil {
		t.Fatal(err)
	}
	allow := func(paths ...string) *zone.Policy {
		p := execPolicy("/tmp")
		p.Exec = zone.Exec{Allow: paths}
		return p
	}
	if r := loaderRoutes(cfg, allow("/bin")); len(r) != 0 {
		t.Errorf("loader not allowed: %v", r)
	}
	// The loader's own file decides, wherever its symlink is.
	if r := loaderRoutes(cfg, allow("/bin", "/lib")); len(r) != 1 || !strings.Contains(r[0], "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2") {
		t.Errorf("allowed loader: %v", r)
	}
	if r := loaderRoutes(cfg, execPolicy("/tmp")); r != nil {
		t.Errorf("a deny list has no loader route: %v", r)
	}
}
