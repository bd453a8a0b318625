package landlock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireLandlock skips tests that need root and a kernel with Landlock.
func requireLandlock(t testing.TB, minABI int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds rootfs trees with device mount points and enters mount namespaces")
	}
	if abi := ABI(); abi < minABI {
		t.Skipf("needs Landlock ABI >= %d, kernel has %d", minABI, abi)
	}
}

// newRootfs builds a minimal busybox image: /bin with every applet, /etc with
// a few files, /tmp, /data, /opt/ok/true, /opt/denied/{true,echo} (copies of
// busybox with their own inode, so exec rules on them do not hit /bin), a
// /secret tree and mount points for /proc, /dev/null, /dev/tty and /dev/pts.
func newRootfs(t testing.TB) string {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("needs a static busybox on PATH")
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "etc", "tmp", "data", "proc", "dev/pts", "opt/ok", "opt/denied", "secret/sub", "sys"} {
		mustOK(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	bin, err := os.ReadFile(bb)
	mustOK(t, err)
	for _, p := range []string{"bin/busybox", "opt/ok/true", "opt/denied/true", "opt/denied/echo"} {
		mustOK(t, os.WriteFile(filepath.Join(root, p), bin, 0o755))
	}
	out, err := exec.Command(bb, "--list").Output()
	mustOK(t, err)
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			mustOK(t, os.Symlink("busybox", filepath.Join(root, "bin", applet)))
		}
	}
	files := map[string]string{
		"etc/passwd":      "root:x:0:0:root:/root:/bin/sh\n",
		"etc/shadow":      "root:SECRET:19000::::::\n",
		"etc/group":       "root:x:0:\n",
		"secret/key":      "KEY\n",
		"secret/sub/more": "MORE\n",
		"dev/null":        "",
		"dev/tty":         "",
	}
	for p, content := range files {
		mustOK(t, os.WriteFile(filepath.Join(root, p), []byte(content), 0o644))
	}
	mustOK(t, os.Symlink("../secret/key", filepath.Join(root, "etc/key-link")))
	mustOK(t, os.Symlink("/../../../../etc/shadow", filepath.Join(root, "etc/escape")))
	return root
}

type result struct {
	stdout, stderr string
	code           int
}

// shimCmd prepares the shim to run args inside rootfs the way a container
// init does: in a private mount namespace, with proc, a tmpfs on /tmp and the
// host's /dev/null, /dev/tty and /dev/pts mounted, chrooted into rootfs, with
// the ruleset and the shim as the last extra files after the caller's own
// (user) ones. Everything up to the shim's exec keeps one pid, so
// cmd.Process is the workload. start runs it and returns once the mounts
// are in place and populate (if any) has been called with the rootfs as the
// namespace sees it, as libzone calls Populate once the init is set up.
type shimCmd struct {
	*exec.Cmd
	rootfs, ready, proceed string
}

func newShimCmd(t testing.TB, rootfs string, ruleset *os.File, user []*os.File, args ...string) *shimCmd {
	t.Helper()
	shim, err := sealedShim()
	mustOK(t, err)
	t.Cleanup(func() { shim.Close() })
	sync := t.TempDir()
	c := &shimCmd{rootfs: rootfs, ready: filepath.Join(sync, "ready"), proceed: filepath.Join(sync, "go")}
	mustOK(t, unix.Mkfifo(c.ready, 0o600))
	mustOK(t, unix.Mkfifo(c.proceed, 0o600))
	rulesetFD := 3 + len(user)
	const setup = `set -e
R=$1 S=$2; shift 2
mount -t proc proc "$R/proc"
mount -t tmpfs tmpfs "$R/tmp"
for d in null tty pts; do mount --bind "/dev/$d" "$R/dev/$d"; done
echo > "$S/ready"; read _ < "$S/go"
exec chroot $CHROOT_OPTS "$R" "$@"`
	argv := append([]string{"--mount", "--propagation", "private", "/bin/sh", "-c", setup, "sh", rootfs, sync},
		shimArgs(rulesetFD, rulesetFD+1, -1, args)...)
	c.Cmd = exec.Command("unshare", argv...)
	c.ExtraFiles = append(append([]*os.File{}, user...), ruleset, shim)
	// The host side (mount, chroot) and the image (/bin) both search PATH.
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"}
	return c
}

func (c *shimCmd) start(t testing.TB, populate func(nsRootfs string)) {
	t.Helper()
	mustOK(t, c.Start())
	ready := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(c.ready) // returns once the script has written it
		ready <- err
	}()
	select {
	case err := <-ready:
		mustOK(t, err)
	case <-time.After(20 * time.Second):
		c.Process.Kill()
		// Unblock the reader: a FIFO open waits for a writer.
		if f, err := os.OpenFile(c.ready, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatalf("the namespace setup script did not get ready: %v", c.Wait())
	}
	if populate != nil {
		populate(fmt.Sprintf("/proc/%d/root%s", c.Process.Pid, c.rootfs))
	}
	mustOK(t, os.WriteFile(c.proceed, []byte("\n"), 0))
}

// runShim creates a ruleset for r, runs args through the shim (see shimCmd)
// and collects the result.
func runShim(t testing.TB, rootfs string, r Rules, args ...string) (result, Summary) {
	t.Helper()
	rs, sum, err := CreateRuleset(r)
	mustOK(t, err)
	if rs == nil {
		t.Fatalf("CreateRuleset(%+v) returned no ruleset", r)
	}
	defer rs.Close()
	c := newShimCmd(t, rootfs, rs, nil, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	c.start(t, func(nsRootfs string) {
		sum, err = Populate(rs, nsRootfs, r)
		mustOK(t, err)
	})
	return wait(t, c, &out, &errb), sum
}

func wait(t testing.TB, c *shimCmd, out, errb *bytes.Buffer) result {
	t.Helper()
	err := c.Wait()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		mustOK(t, err)
	}
	return result{out.String(), errb.String(), code}
}

func build(t testing.TB, rootfs string, r Rules) (*os.File, Summary) {
	t.Helper()
	f, sum, err := BuildRuleset(rootfs, r)
	mustOK(t, err)
	if f == nil {
		t.Fatalf("BuildRuleset(%+v) returned no ruleset", r)
	}
	t.Cleanup(func() { f.Close() })
	return f, sum
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// expectLines checks that out has each want line, in order, among others.
func expectLines(t *testing.T, res result, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && strings.TrimSpace(l) == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("missing line %q\nstdout:\n%s\nstderr:\n%s\nexit %d", want[i], res.stdout, res.stderr, res.code)
	}
}

// reportTo makes the shim of c report a failed exec on status (the shim's
// status argument is "-" until then).
func (c *shimCmd) reportTo(status *os.File) {
	for i, a := range c.Args {
		if a == shimMarker {
			c.Args[i+3] = strconv.Itoa(3 + len(c.ExtraFiles))
			break
		}
	}
	c.ExtraFiles = append(c.ExtraFiles, status)
}
