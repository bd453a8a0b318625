package libzone

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
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
		_, err := denyPathInRoot(rootFD, path, true, func(dev, ino uint64, at string) { got[inodeKey(dev, ino)] = at }, &budget)
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
	if _, err := denyPathInRoot(rootFD, "/secrets", true, func(uint64, uint64, string) {}, &budget); err == nil {
		t.Errorf("a tree larger than the budget was accepted")
	}

	// Without tree (read_only), a directory is only itself, and says so.
	got := map[string]string{}
	budget = 2
	dir, err := denyPathInRoot(rootFD, "/secrets", false, func(dev, ino uint64, at string) { got[inodeKey(dev, ino)] = at }, &budget)
	if err != nil || !dir || len(got) != 1 || got[inodeOf(t, filepath.Join(root, "secrets"))] != "/secrets" {
		t.Errorf("/secrets without tree: dir %v, %v, %v; want the directory alone", dir, got, err)
	}
}

// fileDenies resolves each running member's deny lists in its root (here:
// this test process, whose root is the host's) with the access bit of its
// list, finds a member's process through its cgroup when the record has no
// pid yet, and skips members that run nothing.
func TestFileDeniesOfMembers(t *testing.T) {
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var cg string
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "0::"); ok {
			cg = v
		}
	}
	if cg == "" {
		t.Skip("no cgroup v2 membership")
	}
	dir := t.TempDir()
	secret, tool := filepath.Join(dir, "secret"), filepath.Join(dir, "tool")
	for _, f := range []string{secret, tool} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &zone.Policy{}
	p.Filesystem.Deny = []string{secret, filepath.Join(dir, "missing")}
	p.Exec.Deny = []string{tool}
	ro := filepath.Join(dir, "ro")
	if err := os.MkdirAll(filepath.Join(ro, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.Filesystem.ReadOnly = []string{ro}
	want := map[string]bpf.FileAccess{inodeOf(t, secret): bpf.FileOpen, inodeOf(t, tool): bpf.FileExec, inodeOf(t, ro): bpf.FileChange}

	cases := map[string][]zone.Container{
		"recorded pid":          {{ID: "a", Pid: os.Getpid(), CgroupPath: cg}},
		"plus a stopped member": {{ID: "a", Pid: os.Getpid(), CgroupPath: cg}, {ID: "gone", Pid: 1 << 30, CgroupPath: "/nonexistent-rauha-test"}},
	}
	if cg != "/" {
		// The root cgroup holds the host's pid 1, whose root may be out of
		// reach in a sandbox; the VM test covers joins anyway.
		cases["pid from cgroup.procs"] = []zone.Container{{ID: "a", CgroupPath: cg}}
	}
	for name, members := range cases {
		var kp bpf.ZonePolicy
		paths, _, err := fileDenies(p, members, &kp, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !kp.FileTrees {
			t.Errorf("%s: the read_only directory did not set FileTrees", name)
		}
		got := map[string]bpf.FileAccess{}
		for _, d := range kp.FileDenies {
			got[inodeKey(d.Dev, d.Ino)] |= d.Mask
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: denies %v, want %v", name, got, want)
		}
		// The missing path is listed by its directory and name.
		missing := inodeOf(t, dir) + "/missing"
		if len(kp.FileNames) != 1 || nameKey(kp.FileNames[0]) != missing || kp.FileNames[0].Mask != bpf.FileOpen {
			t.Errorf("%s: names %+v, want %s", name, kp.FileNames, missing)
		}
		if paths[inodeOf(t, secret)] != secret || paths[inodeOf(t, tool)] != tool || paths[inodeOf(t, ro)] != ro ||
			paths[missing] != filepath.Join(dir, "missing") || len(paths) != 4 {
			t.Errorf("%s: paths %v", name, paths)
		}
	}
	// Created after the push: by inodes again, unless the kernel holds the
	// name (verify), which then is what is expected.
	var kp bpf.ZonePolicy
	if _, _, err := fileDenies(p, cases["recorded pid"], &kp, nil); err != nil {
		t.Fatal(err)
	}
	held := kp.FileNames
	if err := os.WriteFile(filepath.Join(dir, "missing"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fileDenies(p, cases["recorded pid"], &kp, nil); err != nil || len(kp.FileNames) != 0 || len(kp.FileDenies) != 4 {
		t.Errorf("created: %+v, %v; want 4 inodes, no name", kp, err)
	}
	if _, _, err := fileDenies(p, cases["recorded pid"], &kp, &bpf.ZonePolicy{FileNames: held}); err != nil || !slices.Equal(kp.FileNames, held) || len(kp.FileDenies) != 3 {
		t.Errorf("created, the kernel holding the name: %+v, %v; want the name, 3 inodes", kp, err)
	}
	if err := os.Remove(filepath.Join(dir, "missing")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fileDenies(p, []zone.Container{{ID: "new"}}, &kp, nil); err != nil || len(kp.FileDenies) != 0 || kp.FileTrees {
		t.Errorf("a member without cgroup: %+v, %v; want nothing", kp, err)
	}
	// Files only: no walk.
	p.Filesystem.ReadOnly = nil
	if _, _, err := fileDenies(p, cases["recorded pid"], &kp, nil); err != nil || kp.FileTrees {
		t.Errorf("files only: FileTrees %v, %v; want false", kp.FileTrees, err)
	}
}

// verify (fileDenies with what the kernel holds) expects an inode made
// below a denied directory since the last push only when the kernel holds
// no directory above it or does not walk: the walk denies it. An inode
// the kernel should hold and does not still fails.
func TestFileDeniesBelowHeldDirectories(t *testing.T) {
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var cg string
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "0::"); ok {
			cg = v
		}
	}
	if cg == "" {
		t.Skip("no cgroup v2 membership")
	}
	members := []zone.Container{{ID: "a", Pid: os.Getpid(), CgroupPath: cg}}
	dir := t.TempDir()
	private := filepath.Join(dir, "private")
	mkfile := func(rel string) {
		t.Helper()
		f := filepath.Join(private, rel)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkfile("old")
	p := &zone.Policy{}
	p.Filesystem.Deny = []string{private}
	p.Exec.Deny = []string{filepath.Join(dir, "bin")}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	var pushed bpf.ZonePolicy
	if _, _, err := fileDenies(p, members, &pushed, nil); err != nil {
		t.Fatal(err)
	}
	if len(pushed.FileDenies) != 3 || !pushed.FileTrees {
		t.Fatalf("pushed %+v, want private, private/old and bin, walking", pushed)
	}
	// Made since the push, one of them in a new directory.
	mkfile("late")
	mkfile("sub/deeper")
	expect := func(kernel bpf.ZonePolicy) bpf.ZonePolicy {
		t.Helper()
		var want bpf.ZonePolicy
		if _, _, err := fileDenies(p, members, &want, &kernel); err != nil {
			t.Fatal(err)
		}
		return want
	}
	if want := expect(pushed); !want.Equal(pushed) {
		t.Errorf("files below a held directory: want %+v, the kernel holds %+v", want.Normalize(), pushed.Normalize())
	}
	// A new file in the exec.deny directory is covered for exec only: the
	// kernel holding bin for exec covers it, not for open.
	if err := os.WriteFile(filepath.Join(dir, "bin/tool"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if want := expect(pushed); !want.Equal(pushed) {
		t.Errorf("a file below the exec.deny directory: want %+v", want.Normalize())
	}
	// Without the walk the kernel denies nothing below: they are expected.
	noWalk := pushed
	noWalk.FileTrees = false
	if want := expect(noWalk); len(want.FileDenies) != 7 {
		t.Errorf("kernel without the walk: want %d inodes %+v, want 7", len(want.FileDenies), want.FileDenies)
	}
	// A listed inode the kernel lacks is still expected unless a
	// directory above it is held: the listed directories themselves fail,
	// private/old is covered like a file made later.
	old := inodeOf(t, filepath.Join(private, "old"))
	for i, d := range pushed.FileDenies {
		missing := pushed
		missing.FileDenies = slices.Delete(slices.Clone(pushed.FileDenies), i, i+1)
		covered := inodeKey(d.Dev, d.Ino) == old
		if got := expect(missing).Equal(missing); got != covered {
			t.Errorf("kernel without %+v: verify passes %v, want %v", d, got, covered)
		}
	}
}

// The policy refuses the deny paths the kernel could not list by name.
func TestMaxDenyName(t *testing.T) {
	if zone.MaxDenyName != bpf.FileNameMax {
		t.Errorf("zone.MaxDenyName %d, bpf.FileNameMax %d", zone.MaxDenyName, bpf.FileNameMax)
	}
}

// mountsBelow picks the mounts whose mount point is strictly below a
// listed directory, with the bits of every listed directory above it, the
// topmost of a stack once, and leaves out mount points that are gone. The
// mount table is made up; its mount points are directories of a tree.
func TestMountsBelow(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ro/tm", "ro/a/b", "other/x", "d/r/m", "d/y"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "ro/file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rootFD, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootFD)
	id := func(rel string) fileID {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(root, rel), &st); err != nil {
			t.Fatal(err)
		}
		return fileID{st.Dev, st.Ino}
	}
	dirs := map[fileID]bpf.FileAccess{id("ro"): bpf.FileChange, id("d"): bpf.FileOpen, id("d/r"): bpf.FileChange}
	var table []*mountinfo.Info
	for _, p := range []string{"/", "/ro", "/ro/tm", "/ro/tm", "/ro/a/b", "/ro/file", "/other/x", "/d/r/m", "/d/y", "/ro/gone", "relative"} {
		table = append(table, &mountinfo.Info{Mountpoint: p})
	}
	got, err := mountsBelow(rootFD, table, dirs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bpf.FileAccess{"/ro/tm": bpf.FileChange, "/ro/a/b": bpf.FileChange, "/ro/file": bpf.FileChange,
		"/d/r/m": bpf.FileOpen | bpf.FileChange, "/d/y": bpf.FileOpen}
	if len(got) != len(want) {
		t.Errorf("got %+v, want %v", got, want)
	}
	for _, n := range got {
		if want[n.Path] != n.Mask || (fileID{n.Dev, n.Ino}) != id(strings.TrimPrefix(n.Path, "/")) {
			t.Errorf("%+v: want mask %v and the inode at %s", n, want[n.Path], n.Path)
		}
	}
	// No listed directory: the table is not read.
	if got, err := nestedMounts(1<<30, rootFD, nil); err != nil || got != nil {
		t.Errorf("no listed directory: %v, %v", got, err)
	}
}

// fileDenies lists the root of a real mount nested below a read_only and
// a denied directory of a member (a thread of this test in a mount
// namespace of its own); verify then holds it, and finds a mount made
// below them after the push not held, until the next push.
func TestFileDeniesNestedMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var cg string
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "0::"); ok {
			cg = v
		}
	}
	if cg == "" {
		t.Skip("no cgroup v2 membership")
	}
	dir := t.TempDir()
	ro, deny := filepath.Join(dir, "ro"), filepath.Join(dir, "deny")
	for _, d := range []string{"ro/tm", "ro/late", "deny/tm", "deny/late", "src/inner"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The member: a thread in a mount namespace of its own, which runs
	// the mounts it is sent and ends with the test.
	type req struct {
		do   func() error
		done chan error
	}
	reqs := make(chan req)
	ready := make(chan int)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNS); err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		ready <- unix.Gettid()
		for r := range reqs {
			r.done <- r.do()
		}
	}()
	tid := <-ready
	defer close(reqs)
	in := func(f func() error) {
		t.Helper()
		done := make(chan error)
		reqs <- req{f, done}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	in(func() error {
		if err := unix.Mount("tmpfs", filepath.Join(ro, "tm"), "tmpfs", 0, ""); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", filepath.Join(deny, "tm"), "tmpfs", 0, ""); err != nil {
			return err
		}
		// A bind whose root is a subdirectory of another directory.
		return unix.Mount(filepath.Join(dir, "src/inner"), filepath.Join(ro, "late"), "", unix.MS_BIND, "")
	})
	var inThread unix.Stat_t
	in(func() error { return unix.Stat(filepath.Join(ro, "tm"), &inThread) })
	members := []zone.Container{{ID: "m", Pid: tid, CgroupPath: cg}}
	p := &zone.Policy{}
	p.Filesystem.ReadOnly = []string{ro}
	p.Filesystem.Deny = []string{deny}
	var pushed bpf.ZonePolicy
	paths, mounts, err := fileDenies(p, members, &pushed, nil)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]nestedMount{}
	for _, n := range mounts {
		byPath[n.Path] = n
	}
	if len(mounts) != 3 || byPath[filepath.Join(ro, "tm")].Mask != bpf.FileChange || byPath[filepath.Join(deny, "tm")].Mask != bpf.FileOpen ||
		byPath[filepath.Join(ro, "late")].Ino != statID(t, filepath.Join(dir, "src/inner")).ino {
		t.Fatalf("mounts %+v, want ro/tm, ro/late (src/inner) and deny/tm", mounts)
	}
	if n := byPath[filepath.Join(ro, "tm")]; n.Ino != inThread.Ino || n.Dev != inThread.Dev || paths[inodeKey(n.Dev, n.Ino)] != n.Path {
		t.Errorf("ro/tm listed as %+v (path %q), the member sees dev %d ino %d", n, paths[inodeKey(n.Dev, n.Ino)], inThread.Dev, inThread.Ino)
	}
	held := map[string]bpf.FileAccess{}
	for _, d := range pushed.FileDenies {
		held[inodeKey(d.Dev, d.Ino)] |= d.Mask
	}
	for _, n := range mounts {
		if held[inodeKey(n.Dev, n.Ino)]&n.Mask != n.Mask {
			t.Errorf("%s is not in the list %+v", n.Path, pushed.FileDenies)
		}
	}
	// The kernel holding what was pushed: verify expects the same.
	var want bpf.ZonePolicy
	pushed.FileTrees = true
	if _, mounts, err = fileDenies(p, members, &want, &pushed); err != nil || !want.Equal(pushed) ||
		slices.ContainsFunc(mounts, func(n nestedMount) bool { return !n.Held }) {
		t.Errorf("verify after the push: %+v, %v; want the pushed list, every mount held", mounts, err)
	}
	// Mounted after the push (a host mount propagating in): expected, not
	// held, also below the denied tree whose walk covers everything else.
	in(func() error {
		if err := unix.Mount("tmpfs", filepath.Join(deny, "late"), "tmpfs", 0, ""); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(deny, "late/f"), nil, 0o644)
	})
	if _, mounts, err = fileDenies(p, members, &want, &pushed); err != nil || want.Equal(pushed) {
		t.Errorf("verify with a new mount: %v, the kernel list passes", err)
	}
	var missing []string
	for _, n := range mounts {
		if !n.Held {
			missing = append(missing, n.Path)
		}
	}
	if !slices.Equal(missing, []string{filepath.Join(deny, "late")}) {
		t.Errorf("not held: %v, want only deny/late", missing)
	}
	r := &zone.IsolationReport{}
	verifyNestedMounts(mounts, r)
	if len(r.Checks) != 1 || r.Checks[0].Passed || !strings.Contains(r.Checks[0].Detail, "container m: "+filepath.Join(deny, "late")) {
		t.Errorf("verify check: %+v", r.Checks)
	}
}

func statID(t *testing.T, path string) fileID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileID{st.Dev, st.Ino}
}

// A deny path whose directory is missing too is listed by a chain of names
// from the deepest directory of it that exists; once the path exists it is
// listed by inode again, unless the kernel holds the chain (verify); a path
// with more missing components than a chain holds is refused.
func TestMissingPathChains(t *testing.T) {
	dir := t.TempDir()
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	path := filepath.Join(dir, "a", "b", "secret")
	byName, tooDeep, err := missingPathInRoot(root, path, bpf.FileOpen, false)
	if err != nil || tooDeep != nil || len(byName) != 1 {
		t.Fatalf("missing: %+v, %v, %v", byName, tooDeep, err)
	}
	c := byName[0]
	if inodeKey(c.Dev, c.Ino) != inodeOf(t, dir) || !slices.Equal(c.Names, []string{"a", "b", "secret"}) || c.Mask != bpf.FileOpen {
		t.Errorf("chain %+v, want %s and a/b/secret", c, inodeOf(t, dir))
	}

	// Through fileDenies: the chain, named by its last link.
	p := &zone.Policy{}
	p.Filesystem.Deny = []string{path}
	members := []zone.Container{{ID: "a", Pid: os.Getpid(), CgroupPath: "/"}}
	if memberPid(&members[0]) == 0 {
		t.Skip("this process is not in the cgroup it names")
	}
	var kp bpf.ZonePolicy
	paths, _, err := fileDenies(p, members, &kp, nil)
	if err != nil || len(kp.FileChains) != 1 || len(kp.FileNames) != 0 || len(kp.FileDenies) != 0 {
		t.Fatalf("fileDenies: %+v, %v", kp, err)
	}
	if paths[nameKey(kp.FileChains[0].Last())] != path || len(paths) != 1 {
		t.Errorf("paths %v", paths)
	}
	held := kp

	// Made, directory by directory: a name from b, then the inode.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fileDenies(p, members, &kp, nil); err != nil || len(kp.FileNames) != 1 || kp.FileNames[0].Name != "secret" || len(kp.FileChains) != 0 {
		t.Errorf("a/b made: %+v, %v; want the name secret", kp, err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fileDenies(p, members, &kp, nil); err != nil || len(kp.FileDenies) != 1 || len(kp.FileChains)+len(kp.FileNames) != 0 {
		t.Errorf("secret made: %+v, %v; want its inode", kp, err)
	}
	if _, _, err := fileDenies(p, members, &kp, &held); err != nil || !kp.Equal(held) {
		t.Errorf("secret made, the kernel holding the chain: %+v, %v; want the chain", kp, err)
	}

	// Nine missing components: refused, naming what to create.
	deep := filepath.Join(dir, "1", "2", "3", "4", "5", "6", "7", "8", "9")
	p.Filesystem.Deny = []string{deep}
	if _, _, err := fileDenies(p, members, &kp, nil); err == nil || !strings.Contains(err.Error(), "at most 8") || !strings.Contains(err.Error(), filepath.Join(dir, "1")) {
		t.Errorf("nine missing components: %v", err)
	}
	// Eight are a chain.
	p.Filesystem.Deny = []string{filepath.Dir(deep)}
	if _, _, err := fileDenies(p, members, &kp, nil); err != nil || len(kp.FileChains) != 1 || len(kp.FileChains[0].Names) != 8 {
		t.Errorf("eight missing components: %+v, %v", kp.FileChains, err)
	}
}
