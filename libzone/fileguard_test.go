package libzone

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		q, p string
		want bool
	}{
		{"/etc", "/etc", true},
		{"/etc/shadow", "/etc", true},
		{"/etcetera", "/etc", false},
		{"/", "/etc", false},
		{"/anything", "/", true},
		{"/etc/", "/etc", true},
	} {
		if got := within(c.q, c.p); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.q, c.p, got, c.want)
		}
	}
}

// TestTopMount: the mount a guarded path must be held by is the last one
// mounted on it, and its per-mount flag says whether it is read-only.
func TestTopMount(t *testing.T) {
	m := []*mountinfo.Info{
		{Mountpoint: "/", FSType: "ext4", Options: "rw,relatime", VFSOptions: "rw"},
		{Mountpoint: "/run/sock", FSType: "tmpfs", Options: "ro,relatime", VFSOptions: "ro"},
		{Mountpoint: "/data", FSType: "ext4", Options: "ro", VFSOptions: "rw"},
		{Mountpoint: "/etc/shadow", FSType: "ext4", Options: "ro", VFSOptions: "rw"},
		{Mountpoint: "/etc/shadow", FSType: "devtmpfs", Options: "rw", VFSOptions: "rw"},
	}
	if e := topMount(m, "/run/sock"); e == nil || !mountHas(e, "ro") || e.FSType != "tmpfs" {
		t.Errorf("/run/sock: %+v", e)
	}
	if e := topMount(m, "/data"); e == nil || !mountHas(e, "ro") {
		t.Errorf("read-only bind of a read-write file system: %+v", e)
	}
	// The last mount at a point is the one the container sees.
	if e := topMount(m, "/etc/shadow"); e == nil || mountHas(e, "ro") {
		t.Errorf("/etc/shadow: the top mount is read-write, got %+v", e)
	}
	if e := topMount(m, "/nope"); e != nil {
		t.Errorf("found a mount that is not there: %+v", e)
	}
}

// TestGuardFiles builds the mounts of a policy on an image with a denied
// file that has a hard link, a denied directory, a deny path that does not
// exist yet, and a read_only tree holding a bind mount.
func TestGuardFiles(t *testing.T) {
	rootfs := t.TempDir()
	for _, d := range []string{"etc", "opt", "secret", "data", "srv/ro", "proc"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(filepath.Join(rootfs, p), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/shadow")
	write("secret/key")
	if err := os.Link(filepath.Join(rootfs, "etc/shadow"), filepath.Join(rootfs, "opt/shadow.bak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(rootfs, "secret/key"), filepath.Join(rootfs, "data/key.link")); err != nil {
		t.Fatal(err)
	}
	vol := t.TempDir()
	cfg := &configs.Config{
		Rootfs: rootfs,
		Mounts: []*configs.Mount{
			{Source: "proc", Destination: "/proc", Device: "proc"},
			{Source: vol, Destination: "/srv/ro/vol", Device: "bind", Flags: unix.MS_BIND | unix.MS_REC},
		},
	}
	p := &zone.Policy{}
	p.Filesystem.ReadOnly = []string{"/srv/ro"}
	p.Filesystem.Deny = []string{"/etc/shadow", "/secret", "/data/later", "/nodir/x", "/proc/kcore"}
	if err := guardFiles(p, cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/srv/ro", "/etc/shadow", "/proc/kcore", "/opt/shadow.bak", "/data/key.link"} {
		if !slices.Contains(cfg.ReadonlyPaths, want) {
			t.Errorf("ReadonlyPaths %v lacks %s", cfg.ReadonlyPaths, want)
		}
	}
	if !slices.Equal(cfg.MaskPaths, []string{"/secret"}) {
		t.Errorf("MaskPaths = %v, want [/secret]", cfg.MaskPaths)
	}
	if cfg.Mounts[1].Flags&unix.MS_RDONLY == 0 {
		t.Error("the bind mount beneath the read_only tree stayed read-write")
	}
	var masks []string
	for _, m := range cfg.Mounts[2:] {
		masks = append(masks, m.Destination)
		if m.Flags&(unix.MS_BIND|unix.MS_RDONLY|unix.MS_NODEV) != unix.MS_BIND|unix.MS_RDONLY|unix.MS_NODEV || m.Source != "/dev/null" {
			t.Errorf("mask mount %+v", m)
		}
	}
	// /nodir/x has no directory to put a mount point in: verify reports it.
	if !slices.Equal(masks, []string{"/data/later"}) {
		t.Errorf("mask mounts on %v, want [/data/later]", masks)
	}
	if got := deniedLinks(cfg); !slices.Equal(got, []string{"/data/key.link", "/opt/shadow.bak"}) {
		t.Errorf("deniedLinks = %v", got)
	}
	if cfg.Seccomp == nil || !slices.ContainsFunc(cfg.Seccomp.Syscalls, func(s *configs.Syscall) bool {
		return s.Name == "open_by_handle_at" && s.Action == configs.Errno
	}) {
		t.Error("open_by_handle_at is not denied")
	}
	// The Landlock rules of the container deny the other names too.
	r := landlockRules(p, cfg, false)
	if !slices.Contains(r.Deny, "/opt/shadow.bak") || !slices.Contains(r.Deny, "/data/key.link") {
		t.Errorf("landlock deny %v lacks the hard links", r.Deny)
	}
	if slices.Contains(p.Filesystem.Deny, "/opt/shadow.bak") {
		t.Error("the policy itself was changed")
	}
}

func TestFileGuardRoutes(t *testing.T) {
	cfg := &configs.Config{Capabilities: &configs.Capabilities{Bounding: []string{"CAP_SYS_ADMIN"}}}
	p := &zone.Policy{}
	if r := fileGuardRoutes(cfg, p); r != nil {
		t.Errorf("no file rules, routes %v", r)
	}
	p.Filesystem.Deny = []string{"/etc/shadow"}
	if r := fileGuardRoutes(cfg, p); len(r) != 1 {
		t.Errorf("CAP_SYS_ADMIN kept: routes %v", r)
	}
	p.Capabilities.Allowed = &[]string{"CHOWN"}
	if r := fileGuardRoutes(cfg, p); r != nil {
		t.Errorf("CAP_SYS_ADMIN taken by the policy: routes %v", r)
	}
}
