package libzone

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestOutermost: a writable path below another gets no copy of its own
// (the one above holds it); siblings and look-alike prefixes do.
func TestOutermost(t *testing.T) {
	got := outermost([]string{"/var/spool/app", "/tmp", "/var/spool", "/var/spoolx", "/var/spool/app/x/"})
	want := []string{"/tmp", "/var/spool", "/var/spoolx"}
	if !slices.Equal(got, want) {
		t.Errorf("outermost = %q, want %q", got, want)
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
	// A read-only volume whose symlink points out of it: resolved inside it.
	rovol, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink("/../.."+outside, filepath.Join(rovol, "esc")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(rovol+outside, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &configs.Config{
		Rootfs: rootfs,
		Mounts: []*configs.Mount{
			{Source: "proc", Destination: "/proc", Device: "proc"},
			{Source: vol, Destination: "/srv/ro/vol", Device: "bind", Flags: unix.MS_BIND | unix.MS_REC},
			{Source: rovol, Destination: "/vol", Device: "bind", Flags: unix.MS_BIND | unix.MS_REC | unix.MS_RDONLY},
			{Source: "tmpfs", Destination: "/dev", Device: "tmpfs"},
			{Source: "tmpfs", Destination: "/scratch", Device: "tmpfs"},
			{Source: "shm", Destination: "/dev/shm", Device: "tmpfs"},
			{Source: "tmpfs", Destination: "/run", Device: "tmpfs"},
			{Source: "tmpfs", Destination: "/frozen", Device: "tmpfs", Flags: unix.MS_RDONLY},
		},
	}
	nmounts := len(cfg.Mounts)
	p := &zone.Policy{}
	p.Filesystem.ReadOnly = []string{"/srv/ro"}
	p.Filesystem.Deny = []string{"/etc/shadow", "/secret", "/data/later", "/nodir/x", "/proc/kcore",
		"/vol/a/b/later", "/vol/esc/x/later", "/dev/later", "/scratch/a/later", "/frozen/later",
		"/dev/shm/later", "/run"}
	if err := guardFiles(p, cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/srv/ro", "/etc/shadow", "/proc/kcore", "/opt/shadow.bak", "/data/key.link", "/dev/later", "/frozen/later"} {
		if !slices.Contains(cfg.ReadonlyPaths, want) {
			t.Errorf("ReadonlyPaths %v lacks %s", cfg.ReadonlyPaths, want)
		}
	}
	if !slices.Equal(cfg.MaskPaths, []string{"/secret", "/run"}) {
		t.Errorf("MaskPaths = %v, want [/secret /run]", cfg.MaskPaths)
	}
	if cfg.Mounts[1].Flags&unix.MS_RDONLY == 0 {
		t.Error("the bind mount beneath the read_only tree stayed read-write")
	}
	var masks []string
	for _, m := range cfg.Mounts[nmounts:] {
		masks = append(masks, m.Destination)
		if m.Flags&(unix.MS_BIND|unix.MS_RDONLY|unix.MS_NODEV) != unix.MS_BIND|unix.MS_RDONLY|unix.MS_NODEV || m.Source != "/dev/null" {
			t.Errorf("mask mount %+v", m)
		}
	}
	// A missing path gets the null device, its mount point made with the
	// directories above it in the rootfs or bind source (also a read-only
	// one), never outside it; on a writable tmpfs libcontainer makes them.
	// The runtime's /dev and a read-only tmpfs are left to readonlyPaths.
	if want := []string{"/data/later", "/nodir/x", "/vol/a/b/later", "/vol/esc/x/later", "/scratch/a/later", "/dev/shm/later"}; !slices.Equal(masks, want) {
		t.Errorf("mask mounts on %v, want %v", masks, want)
	}
	for _, f := range []string{rootfs + "/data/later", rootfs + "/nodir/x", rovol + "/a/b/later", rovol + outside + "/x/later"} {
		if st, err := os.Lstat(f); err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
			t.Errorf("mount point %s: %v, %v", f, st, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("a mount point was made outside the bind source: %v", ents)
	}
	// A dangling symlink on the way, or a file, leaves nowhere to put the
	// mount point: the create is refused, not left unguarded.
	if err := os.Symlink("/gone", filepath.Join(rovol, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/vol/dangling/later", "/etc/shadow/later"} {
		q := &zone.Policy{}
		q.Filesystem.Deny = []string{d}
		c := &configs.Config{Rootfs: rootfs, Mounts: []*configs.Mount{cfg.Mounts[2]}}
		if err := guardFiles(q, c); err == nil || !strings.Contains(err.Error(), "filesystem.deny "+d+": ") {
			t.Errorf("deny %s: err = %v", d, err)
		}
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

// TestMaskMissingUserns: the mount point of a missing deny path, and the
// directories made for it, belong to the container's root in a user
// namespace; what was there before keeps its owner.
func TestMaskMissingUserns(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &configs.Config{
		Rootfs:      rootfs,
		Namespaces:  configs.Namespaces{{Type: configs.NEWUSER}},
		UIDMappings: []configs.IDMap{{ContainerID: 0, HostID: 100000, Size: 65536}},
		GIDMappings: []configs.IDMap{{ContainerID: 0, HostID: 200000, Size: 65536}},
	}
	p := &zone.Policy{}
	p.Filesystem.Deny = []string{"/data/a/b/later"}
	if err := guardFiles(p, cfg); err != nil {
		t.Fatal(err)
	}
	owner := func(rel string) [2]uint32 {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(rootfs, rel), &st); err != nil {
			t.Fatal(err)
		}
		return [2]uint32{st.Uid, st.Gid}
	}
	for _, rel := range []string{"data/a", "data/a/b", "data/a/b/later"} {
		if got := owner(rel); got != [2]uint32{100000, 200000} {
			t.Errorf("%s owned by %v, want the container's root", rel, got)
		}
	}
	if got := owner("data"); got != [2]uint32{uint32(os.Geteuid()), uint32(os.Getegid())} {
		t.Errorf("data (there before) owned by %v", got)
	}
}
