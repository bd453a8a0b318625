package landlock

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestResolveInRootStaysInside(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "usr/bin", "secret"} {
		mustOK(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	mustOK(t, os.WriteFile(filepath.Join(root, "etc/shadow"), nil, 0o600))
	mustOK(t, os.WriteFile(filepath.Join(root, "usr/bin/ping"), nil, 0o755))
	mustOK(t, os.Symlink("usr/bin", filepath.Join(root, "bin")))
	mustOK(t, os.Symlink("/../../../../etc/shadow", filepath.Join(root, "escape")))
	mustOK(t, os.Symlink("../../../secret", filepath.Join(root, "etc/up")))
	mustOK(t, os.Symlink("loop", filepath.Join(root, "loop")))
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
	mustOK(t, err)
	defer unix.Close(fd)

	for in, want := range map[string]string{
		"/bin/ping":        "usr/bin/ping",
		"/escape":          "etc/shadow",
		"/etc/up":          "secret",
		"/etc/../../etc/.": "etc",
		"/":                "",
	} {
		got, err := resolveInRoot(fd, in)
		if err != nil {
			t.Fatalf("resolve %s: %v", in, err)
		}
		if strings.Join(got, "/") != want {
			t.Errorf("resolve %s = %q, want %q", in, strings.Join(got, "/"), want)
		}
	}
	for _, in := range []string{"/missing", "/etc/shadow/x", "/bin/nope"} {
		if _, err := resolveInRoot(fd, in); !errors.Is(err, errNotInRoot) {
			t.Errorf("resolve %s: %v, want errNotInRoot", in, err)
		}
	}
	if _, err := resolveInRoot(fd, "/loop"); !errors.Is(err, unix.ELOOP) {
		t.Errorf("resolve /loop: %v, want ELOOP", err)
	}
	if _, err := resolveInRoot(fd, "relative"); err == nil {
		t.Error("a relative path was accepted")
	}
}

func TestPlanGatesOnABI(t *testing.T) {
	r := Rules{Writable: []string{"/tmp"}, ExecDeny: []string{"/bin/x"}, ScopeSignals: true, ScopeAbstractUnix: true}
	for _, tc := range []struct {
		abi         int
		unavailable []string
		truncate    bool
		refer       bool
		scoped      uint64
	}{
		{0, []string{"filesystem", "exec", "signals.scope", "abstract_unix.scope"}, false, false, 0},
		{1, []string{"filesystem.truncate", "signals.scope", "abstract_unix.scope"}, false, false, 0},
		{2, []string{"filesystem.truncate", "signals.scope", "abstract_unix.scope"}, false, true, 0},
		{5, []string{"signals.scope", "abstract_unix.scope"}, true, true, 0},
		{6, nil, true, true, unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET},
		{10, nil, true, true, unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET},
	} {
		p := newPlan(tc.abi, r)
		if !reflect.DeepEqual(p.summary.Unavailable, tc.unavailable) {
			t.Errorf("ABI %d: unavailable %q, want %q", tc.abi, p.summary.Unavailable, tc.unavailable)
		}
		if got := p.handled&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0; got != tc.truncate {
			t.Errorf("ABI %d: truncate handled %v", tc.abi, got)
		}
		if got := p.handled&unix.LANDLOCK_ACCESS_FS_REFER != 0; got != tc.refer {
			t.Errorf("ABI %d: refer handled %v", tc.abi, got)
		}
		if p.scoped != tc.scoped {
			t.Errorf("ABI %d: scoped %#x, want %#x", tc.abi, p.scoped, tc.scoped)
		}
		// ExecDeny handles reading files (the loader maps what it reads),
		// never listing directories.
		if tc.abi > 0 && (p.handled&unix.LANDLOCK_ACCESS_FS_READ_FILE == 0 || p.handled&unix.LANDLOCK_ACCESS_FS_READ_DIR != 0 || p.handled&unix.LANDLOCK_ACCESS_FS_EXECUTE == 0) {
			t.Errorf("ABI %d: handled %s; want read_file and execute for ExecDeny, no read_dir without Deny", tc.abi, rightNames(p.handled))
		}
		if q := newPlan(tc.abi, Rules{Writable: r.Writable}); q.handled&accessRead != 0 {
			t.Errorf("ABI %d: reads handled without Deny or ExecDeny: %s", tc.abi, rightNames(q.handled))
		}
	}
}

func TestNothingToEnforce(t *testing.T) {
	if ABI() < 1 {
		t.Skip("needs Landlock")
	}
	f, sum, err := BuildRuleset(t.TempDir(), Rules{})
	if f != nil || err != nil || len(sum.Unavailable) != 0 {
		t.Fatalf("empty rules: %v %+v %v; want no ruleset and no error", f, sum, err)
	}
}

func TestSkippedAndNotes(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	mustOK(t, os.Symlink("busybox", filepath.Join(rootfs, "bin/myping")))
	f, sum, err := BuildRuleset(rootfs, Rules{Deny: []string{"/nope"}, Writable: []string{"/var/data"}, ExecDeny: []string{"/bin/myping"}})
	mustOK(t, err)
	defer f.Close()
	if want := []string{"writable /var/data: not in the rootfs", "deny /nope: not in the rootfs"}; !reflect.DeepEqual(sum.Skipped, want) {
		t.Errorf("skipped %q, want %q", sum.Skipped, want)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "exec deny /bin/myping applies to /bin/busybox") {
		t.Errorf("notes %q do not explain the symlink", sum.Notes)
	}
}
