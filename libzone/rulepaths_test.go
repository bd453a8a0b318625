package libzone

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// ruleTree makes a root with a read_only-like tree /srv/ro and symlinks
// into and out of it.
func ruleTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"srv/ro/sub", "tmp", "scratch", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"lnk":         "/srv/ro",     // absolute: inside the root, not the host's
		"tmp/deep":    "/srv/ro/sub", // a ".." after it leaves sub, not /tmp
		"tmp/rel":     "../srv/ro",
		"srv/ro/out":  "/scratch", // out of the rule path
		"esc":         "../../../../../etc",
		"srv/ro/loop": "loop",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The kernel's path of a name: symlinks followed in the root, ".." from
// where they led, the last name kept unless followed, a missing directory
// ending the lookup.
func TestKernelPath(t *testing.T) {
	root := ruleTree(t)
	for _, tc := range []struct {
		p      string
		follow bool
		want   string
	}{
		{"/srv/ro/a", false, "/srv/ro/a"},
		{"/lnk/a", false, "/srv/ro/a"},
		{"/tmp/deep/../b", false, "/srv/ro/b"},
		{"/tmp/rel/a", false, "/srv/ro/a"},
		{"/tmp/../lnk/sub/../a", false, "/srv/ro/a"},
		{"/../../lnk/a", false, "/srv/ro/a"},
		{"/srv/ro/out/x", false, "/scratch/x"},
		{"/lnk", false, "/lnk"},
		{"/lnk", true, "/srv/ro"},
		{"/lnk/", false, "/lnk"},
		{"/lnk/sub/..", false, "/srv/ro"},
		{"/esc/passwd", false, "/etc/passwd"},
		{"/lnk/missing/s", true, "/srv/ro/missing/s"},
		{"/lnk/missing/more/s", false, "/srv/ro/missing/more/s"},
		{"/lnk/missing/../../../tmp/s", false, "/srv/ro/missing"},
		{"/", false, "/"},
	} {
		got, ok := kernelPath(root, tc.p, tc.follow)
		if !ok || got != tc.want {
			t.Errorf("kernelPath(%q, follow %v) = %q, %v; want %q", tc.p, tc.follow, got, ok, tc.want)
		}
	}
	if got, ok := kernelPath(root, "/srv/ro/loop/x", false); ok {
		t.Errorf("a symlink loop resolved to %q", got)
	}
	if got, ok := kernelPath(filepath.Join(root, "gone"), "/srv/ro/a", false); ok {
		t.Errorf("a root that does not exist resolved to %q", got)
	}
}

// A mount error is judged by the path the kernel resolved while a process
// of the member runs: kept under the name of the rule path it reached
// through a symlink or "..", dropped when a symlink led out of the rule
// path; by its words when none runs. The other names of denied inodes
// found at a member's create count as deny paths of that member.
func TestMountErrorEventsResolved(t *testing.T) {
	created := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	z := &zone.Zone{Name: "web", ID: 7, Created: created}
	z.Policy.Filesystem.ReadOnly = []string{"/srv/ro"}
	root := ruleTree(t)
	names := &eventNames{zones: zoneIDs{7: z}, rules: ruleMembers{found: map[uint64]ruleMember{
		40: {roots: []string{root}}, 41: {}, 42: {links: []string{"/opt/shadow.bak"}},
		// A process that ended: its root is gone, the next one resolves.
		43: {roots: []string{"/proc/0/root", root}}}}}
	ke := &kernelEnforcer{k: &bpf.Kernel{}}
	for _, tc := range []struct {
		cgid       uint64
		op         bpf.FileOp
		path, next string
		want       string // "": dropped
	}{
		{40, bpf.FileOpRename, "/lnk/a", "/tmp/a", "rename /srv/ro/a (invalid cross-device link)"},
		{40, bpf.FileOpRename, "/tmp/deep/../b", "/tmp/b", "rename /srv/ro/b (invalid cross-device link)"},
		{40, bpf.FileOpRename, "/tmp/x", "/tmp/rel/x", "rename /srv/ro/x (invalid cross-device link)"},
		{40, bpf.FileOpRename, "/srv/ro/out/x", "/tmp/x", ""},
		{43, bpf.FileOpRename, "/lnk/a", "/tmp/a", "rename /srv/ro/a (invalid cross-device link)"},
		{43, bpf.FileOpRename, "/srv/ro/out/x", "/tmp/x", ""},
		{40, bpf.FileOpUnixConnect, "/lnk", "", "unix connect /srv/ro (invalid cross-device link)"},
		// No process of the member runs: the words.
		{41, bpf.FileOpRename, "/srv/ro/out/x", "/tmp/x", "rename /srv/ro/out/x (invalid cross-device link)"},
		{41, bpf.FileOpRename, "/lnk/a", "/tmp/a", ""},
		// Another name of a denied inode, held by a mount as the deny
		// paths are: the member's, not another's.
		{42, bpf.FileOpUnlink, "/opt/shadow.bak", "", "unlink /opt/shadow.bak (invalid cross-device link)"},
		{41, bpf.FileOpUnlink, "/opt/shadow.bak", "", ""},
	} {
		ev := bpf.Event{Zone: 7, CgroupID: tc.cgid, Time: created.Add(time.Second), Control: bpf.ControlFile, Hook: bpf.HookSysExit,
			Verdict: bpf.VerdictObserved, Errno: 18, Op: tc.op, Path: tc.path, NewPath: tc.next}
		got, kept := names.event(ke.kernelEvent(ev))
		switch {
		case tc.want == "" && kept:
			t.Errorf("%s %q %q: kept as %q, want it dropped", tc.op, tc.path, tc.next, got.Object)
		case tc.want != "" && !kept:
			t.Errorf("%s %q %q: dropped, want %q", tc.op, tc.path, tc.next, tc.want)
		case kept && got.Object != tc.want:
			t.Errorf("%s %q %q: object %q, want %q", tc.op, tc.path, tc.next, got.Object, tc.want)
		}
	}
}
