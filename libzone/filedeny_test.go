package libzone

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func inodeOf(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return inodeKey(st.Dev, st.Ino)
}

// denyPathInRoot resolves like the container would, inside its root:
// symlinks (absolute or with ..) that point out of the root land inside it,
// directories are trees, missing paths deny nothing.
func TestDenyPathInRoot(t *testing.T) {
	outside := t.TempDir()
	root := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"etc", "secrets/sub", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "etc/shadow"))
	write(filepath.Join(outside, "shadow"))
	write(filepath.Join(root, "secrets/key"))
	write(filepath.Join(root, "secrets/sub/deep"))
	write(filepath.Join(root, "bin/busybox"))
	// Each would escape the root if followed on the host.
	for name, target := range map[string]string{
		"etc/abs":   filepath.Join(outside, "shadow"),
		"etc/dots":  "../../../../../../../" + filepath.Join(outside, "shadow"),
		"bin/wget":  "/bin/busybox",
		"etc/loose": "/nonexistent",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(root, "secrets/link")); err != nil {
		t.Fatal(err)
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootFD)

	resolve := func(path string) map[string]string {
		t.Helper()
		got := map[string]string{}
		budget := maxDenyInodes
		err := denyPathInRoot(rootFD, path, func(dev, ino uint64, at string) { got[inodeKey(dev, ino)] = at }, &budget)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return got
	}
	one := func(path, want string) {
		t.Helper()
		got := resolve(path)
		if len(got) != 1 || got[inodeOf(t, want)] != path {
			t.Errorf("%s: got %v, want only the inode of %s", path, got, want)
		}
	}
	one("/etc/shadow", filepath.Join(root, "etc/shadow"))
	one("/bin/wget", filepath.Join(root, "bin/busybox"))
	for _, p := range []string{"/etc/abs", "/etc/dots"} {
		got := resolve(p)
		if _, bad := got[inodeOf(t, filepath.Join(outside, "shadow"))]; bad {
			t.Errorf("%s: resolved to the file outside the root", p)
		}
		if len(got) != 0 {
			t.Errorf("%s: got %v, want nothing (the target does not exist inside the root)", p, got)
		}
	}
	if got := resolve("/etc/loose"); len(got) != 0 {
		t.Errorf("dangling symlink: got %v, want nothing", got)
	}
	if got := resolve("/nonexistent/x"); len(got) != 0 {
		t.Errorf("missing path: got %v", got)
	}

	tree := resolve("/secrets")
	for p, at := range map[string]string{
		"secrets": "/secrets", "secrets/key": "/secrets/key", "secrets/sub": "/secrets/sub",
		"secrets/sub/deep": "/secrets/sub/deep", "secrets/link": "/secrets/link",
	} {
		if tree[inodeOf(t, filepath.Join(root, p))] != at {
			t.Errorf("tree /secrets: %s missing or misnamed in %v", p, tree)
		}
	}
	if _, ok := tree[inodeOf(t, filepath.Join(root, "etc/shadow"))]; ok {
		t.Errorf("tree /secrets followed the symlink secrets/link to /etc/shadow")
	}
	if len(tree) != 5 {
		t.Errorf("tree /secrets: %d inodes, want 5: %v", len(tree), tree)
	}

	budget := 2
	if err := denyPathInRoot(rootFD, "/secrets", func(uint64, uint64, string) {}, &budget); err == nil {
		t.Errorf("a tree larger than the budget was accepted")
	}
}
