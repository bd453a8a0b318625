package libzone

import (
	"slices"
	"testing"

	"github.com/moby/sys/mountinfo"
)

func TestNoexecTargets(t *testing.T) {
	mi := func(mp, fstype, opts, vfs string) *mountinfo.Info {
		return &mountinfo.Info{Mountpoint: mp, FSType: fstype, Options: opts, VFSOptions: vfs}
	}
	for _, tc := range []struct {
		name   string
		mounts []*mountinfo.Info
		want   []string
		rootRW bool
	}{
		{"read-only root, writable tmpfs mounts", []*mountinfo.Info{
			mi("/", "overlay", "ro,relatime", "rw"),
			mi("/proc", "proc", "rw,nosuid,nodev,noexec", "rw"),
			mi("/dev", "tmpfs", "rw,nosuid", "rw,size=65536k"),
			mi("/dev/pts", "devpts", "rw,nosuid,noexec", "rw"),
			mi("/dev/shm", "tmpfs", "rw,nosuid,nodev", "rw"),
			mi("/sys", "sysfs", "ro,nosuid", "ro"),
			mi("/sys/fs/cgroup", "cgroup2", "rw,nosuid", "rw"),
			mi("/tmp", "ext4", "rw,relatime", "rw"),
		}, []string{"/dev", "/dev/shm", "/tmp"}, false},
		{"a writable root is named, not made noexec", []*mountinfo.Info{
			mi("/", "ext4", "rw,relatime", "rw"),
			mi("/data", "ext4", "rw,noexec", "rw"),
		}, nil, true},
		{"only the topmost mount at a place counts", []*mountinfo.Info{
			mi("/", "ext4", "ro", "rw"),
			mi("/tmp", "ext4", "rw", "rw"),
			mi("/tmp", "ext4", "rw,noexec", "rw"),
			mi("/srv", "ext4", "ro", "rw"),
			mi("/srv", "tmpfs", "rw", "rw"),
		}, []string{"/srv"}, false},
		{"a read-only file system under a writable mount", []*mountinfo.Info{
			mi("/", "squashfs", "rw", "ro"),
			mi("/opt", "squashfs", "rw,relatime", "ro"),
		}, nil, false},
	} {
		got, rootRW := noexecTargets(tc.mounts)
		if !slices.Equal(got, tc.want) || rootRW != tc.rootRW {
			t.Errorf("%s: %q, root writable %v; want %q, %v", tc.name, got, rootRW, tc.want, tc.rootRW)
		}
	}
}
