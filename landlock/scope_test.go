package landlock

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRulesOnHiddenMountPointsAreIgnored documents the kernel behaviour that
// makes Populate run in the container's mount namespace: Landlock skips the
// directory a file system is mounted on, so a rule built on the bundle's
// rootfs/tmp does not cover the tmpfs mounted there later, while a rule on an
// ancestor of a mount point does.
func TestRulesOnHiddenMountPointsAreIgnored(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	rs, _ := build(t, rootfs, Rules{Writable: []string{"/tmp", "/data"}, Deny: []string{"/etc/shadow"}})
	c := newShimCmd(t, rootfs, rs, nil, "sh", "-c", probe+`ERR=/data/err
p data sh -c 'echo x > /data/a'
p tmpfs-tmp sh -c 'echo x > /tmp/a'
`)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	c.start(t, nil)
	expectLines(t, wait(t, c, &out, &errb), "data ok", "tmpfs-tmp denied")
}

// runHelper runs this test binary as a helper (see main_test.go) through the
// shim, directly on the host, in a domain built from r.
func runHelper(t *testing.T, r Rules, args ...string) string {
	t.Helper()
	rs, _ := build(t, "/", r)
	shim, err := sealedShim()
	mustOK(t, err)
	defer shim.Close()
	cmd := exec.Command("/proc/self/fd/4", shimArgs(3, 4, -1, append([]string{os.Args[0]}, args[1:]...))[1:]...)
	cmd.ExtraFiles = []*os.File{rs, shim}
	cmd.Env = []string{"RAUHA_LANDLOCK_HELPER=" + args[0]}
	out, _ := cmd.CombinedOutput()
	return strings.TrimSpace(string(out))
}

func TestScopeSignals(t *testing.T) {
	requireLandlock(t, 6)
	self := strconv.Itoa(os.Getpid())
	if got := runHelper(t, Rules{ScopeSignals: true}, "signal", self); got != "EPERM" {
		t.Fatalf("scoped process signalling its parent's domain: %q, want EPERM", got)
	}
	if got := runHelper(t, Rules{Writable: []string{"/tmp"}}, "signal", self); got != "ok" {
		t.Fatalf("unscoped process: %q, want ok", got)
	}

	// Two processes wrapped separately land in sibling domains: this is the
	// "docker exec c kill 1" problem described in doc.go.
	rs, _ := build(t, "/", Rules{ScopeSignals: true})
	shim, err := sealedShim()
	mustOK(t, err)
	defer shim.Close()
	sleeper := exec.Command("/proc/self/fd/4", shimArgs(3, 4, -1, []string{"sleep", "30"})[1:]...)
	sleeper.ExtraFiles = []*os.File{rs, shim}
	sleeper.Env = []string{"PATH=/usr/bin:/bin"}
	mustOK(t, sleeper.Start())
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	waitComm(t, sleeper.Process.Pid, "sleep", &bytes.Buffer{})
	pid := strconv.Itoa(sleeper.Process.Pid)
	if got := runHelper(t, Rules{ScopeSignals: true}, "signal", pid); got != "EPERM" {
		t.Fatalf("sibling domain signalling the init: %q, want EPERM", got)
	}
	if got := runHelper(t, Rules{Writable: []string{"/tmp"}}, "signal", pid); got != "ok" {
		t.Fatalf("unscoped domain signalling a scoped process: %q, want ok", got)
	}
	mustOK(t, unix.Kill(sleeper.Process.Pid, 0)) // the runtime can always signal in
}

func TestScopeAbstractUnix(t *testing.T) {
	requireLandlock(t, 6)
	name := fmt.Sprintf("rauha-landlock-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(fd)
	mustOK(t, unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}))
	mustOK(t, unix.Listen(fd, 4))
	if got := runHelper(t, Rules{ScopeAbstractUnix: true}, "connect-abstract", name); got != "EPERM" {
		t.Fatalf("scoped connect: %q, want EPERM", got)
	}
	if got := runHelper(t, Rules{ScopeSignals: true}, "connect-abstract", name); got != "ok" {
		t.Fatalf("connect without abstract-socket scoping: %q, want ok", got)
	}
}
