package landlock

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// TestShimUpToDate rebuilds the shim with the //go:generate lines of
// shim.go and checks the committed binaries match.
func TestShimUpToDate(t *testing.T) {
	src, err := os.ReadFile("shim.go")
	mustOK(t, err)
	checked := 0
	for _, line := range strings.Split(string(src), "\n") {
		args, ok := strings.CutPrefix(line, "//go:generate ")
		if !ok {
			continue
		}
		argv := strings.Fields(args)
		if _, err := exec.LookPath(argv[0]); err != nil {
			t.Logf("skipping %s: %v", argv[0], err)
			continue
		}
		var committed string
		for i := range argv {
			if argv[i] == "-o" {
				committed = argv[i+1]
				argv[i+1] = filepath.Join(t.TempDir(), "shim")
			}
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", args, err, out)
		}
		want, err := os.ReadFile(committed)
		mustOK(t, err)
		for i := range argv {
			if argv[i] == "-o" {
				got, err := os.ReadFile(argv[i+1])
				mustOK(t, err)
				if !bytes.Equal(got, want) {
					t.Errorf("%s is out of date with shim/shim.c: run go generate ./landlock", committed)
				}
			}
		}
		checked++
	}
	if checked == 0 {
		t.Skip("no shim compiler (x86_64-linux-gnu-gcc, aarch64-linux-gnu-gcc) installed")
	}
	if len(shimBinary) == 0 {
		t.Fatalf("no shim is embedded for %s", runtime.GOARCH)
	}
}

// TestWorkloadSeesOnlyItsFDs checks the workload gets exactly the caller's
// fds, numbered as passed, and that a process without CAP_SYS_ADMIN gets
// no_new_privs (which Landlock requires).
func TestWorkloadSeesOnlyItsFDs(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	r := Rules{Writable: []string{"/tmp"}, Deny: []string{"/etc/shadow"}}
	rs, _, err := CreateRuleset(r)
	mustOK(t, err)
	defer rs.Close()
	userR, userW, err := os.Pipe()
	mustOK(t, err)
	defer userR.Close()
	defer userW.Close()

	for _, tc := range []struct{ name, chrootOpts, nnp string }{
		{"root", "", "0"},
		{"nobody", "--userspec=65534:65534", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newShimCmd(t, rootfs, rs, []*os.File{userW}, "cat")
			c.Env = append(c.Env, "CHROOT_OPTS="+tc.chrootOpts)
			stdin, err := c.StdinPipe()
			mustOK(t, err)
			var errb bytes.Buffer
			c.Stderr = &errb
			c.start(t, func(ns string) { _, err := Populate(rs, ns, r); mustOK(t, err) })
			pid := c.Process.Pid
			waitComm(t, pid, "cat", &errb)
			fds := strings.Join(listFDs(t, pid), " ")
			if want := strings.Join(append([]string{"0", "1", "2", "3"}, inheritedFDs(t)...), " "); fds != want {
				t.Errorf("workload fds = %v, want %v (stdio, the caller's pipe and what this test inherited)", fds, want)
			}
			var st unix.Stat_t
			mustOK(t, unix.Stat(fmt.Sprintf("/proc/%d/fd/3", pid), &st))
			var want unix.Stat_t
			mustOK(t, unix.Fstat(int(userW.Fd()), &want))
			if st.Ino != want.Ino {
				t.Errorf("fd 3 is not the caller's pipe")
			}
			if got := statusField(t, pid, "NoNewPrivs"); got != tc.nnp {
				t.Errorf("NoNewPrivs = %s, want %s", got, tc.nnp)
			}
			stdin.Close()
			if err := c.Wait(); err != nil {
				t.Fatalf("workload: %v, stderr %q", err, errb.String())
			}
		})
	}
}

func waitComm(t *testing.T, pid int, comm string, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(b)) == comm {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d never became %q; stderr %q", pid, comm, stderr.String())
}

// inheritedFDs lists this process's fds above 2 without FD_CLOEXEC: they
// were inherited from whoever started the test and leak into every child.
func inheritedFDs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, name := range listFDs(t, os.Getpid()) {
		var fd int
		fmt.Sscan(name, &fd)
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fd > 2 && flags&unix.FD_CLOEXEC == 0 {
			out = append(out, name)
		}
	}
	return out
}

func listFDs(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	mustOK(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) < len(out[j]) || len(out[i]) == len(out[j]) && out[i] < out[j] })
	return out
}

func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	mustOK(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

// TestFailsClosed checks the workload never runs when the domain cannot be
// entered, and that a ruleset without rules lets nothing run.
func TestFailsClosed(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	marker := filepath.Join(rootfs, "data/ran")
	workload := []string{"touch", "/data/ran"}

	notRuleset, err := os.Open("/dev/null")
	mustOK(t, err)
	defer notRuleset.Close()
	c := newShimCmd(t, rootfs, notRuleset, nil, workload...)
	var errb bytes.Buffer
	c.Stderr = &errb
	c.start(t, nil)
	res := wait(t, c, &bytes.Buffer{}, &errb)
	if res.code != 125 || !strings.Contains(res.stderr, "cannot enter the zone's Landlock domain") {
		t.Fatalf("bad ruleset fd: exit %d, stderr %q; want 125", res.code, res.stderr)
	}

	// Without the marker argument the shim refuses to do anything.
	shim, err := sealedShim()
	mustOK(t, err)
	defer shim.Close()
	cmd := exec.Command("/proc/self/fd/3", "touch", "/tmp/x", "1", "2")
	cmd.ExtraFiles = []*os.File{shim}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "must be started by the rauha runtime") {
		t.Fatalf("shim without marker: %v %q; want exit 125", err, out)
	}

	// A ruleset that was never populated grants nothing: even exec fails.
	rs, _, err := CreateRuleset(Rules{Deny: []string{"/etc/shadow"}})
	mustOK(t, err)
	defer rs.Close()
	c = newShimCmd(t, rootfs, rs, nil, workload...)
	errb.Reset()
	c.Stderr = &errb
	c.start(t, nil)
	res = wait(t, c, &bytes.Buffer{}, &errb)
	if res.code != 126 {
		t.Fatalf("unpopulated ruleset: exit %d, stderr %q; want 126", res.code, res.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workload ran although the shim failed")
	}
}

// TestTerminal checks an interactive shell keeps working on a tty under a
// policy that handles reads and writes.
func TestTerminal(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	master, slave := openPTY(t)
	defer master.Close()
	r := Rules{Writable: []string{"/tmp"}, Deny: []string{"/etc/shadow"}}
	rs, _, err := CreateRuleset(r)
	mustOK(t, err)
	defer rs.Close()
	c := newShimCmd(t, rootfs, rs, nil, "sh", "-c", "tty; echo via-dev-tty > /dev/tty; stty size; cat /etc/shadow")
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &unix.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	mustOK(t, unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}))
	c.start(t, func(ns string) { _, err := Populate(rs, ns, r); mustOK(t, err) })
	slave.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, master); close(done) }() // ends with EIO when the tty is gone
	c.Wait()
	<-done
	var lines []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	got := strings.Join(lines, "|")
	if !strings.HasPrefix(lines[0], "/dev/pts/") || !strings.Contains(got, "via-dev-tty|24 80|") ||
		!strings.Contains(got, "Permission denied") {
		t.Fatalf("terminal session: %q", got)
	}
}

func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	mustOK(t, err)
	mustOK(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	mustOK(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	mustOK(t, err)
	return m, s
}

// TestStatusFD checks that a failed exec reaches the status fd (and only
// it) with the path and the error, and that a successful one closes it
// without a word (the workload never holds it).
func TestStatusFD(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	allow := Rules{Writable: []string{"/tmp"}}
	// The image's programs are all busybox: denying one denies every one.
	deny := Rules{Writable: []string{"/tmp"}, ExecDeny: []string{"/bin/touch"}}
	for _, tc := range []struct {
		name   string
		r      Rules
		args   []string
		report string
	}{
		{"denied", deny, []string{"/bin/touch", "/tmp/x"}, "exec: \"/bin/touch\": permission denied\n"},
		{"not found", allow, []string{"nosuch"}, "exec: \"nosuch\": executable file not found in $PATH\n"},
		{"ran", allow, []string{"cat"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			rs, _, err := CreateRuleset(r)
			mustOK(t, err)
			defer rs.Close()
			statusR, statusW, err := os.Pipe()
			mustOK(t, err)
			defer statusR.Close()
			c := newShimCmd(t, rootfs, rs, nil, tc.args...)
			c.reportTo(statusW)
			stdin, err := c.StdinPipe()
			mustOK(t, err)
			defer stdin.Close()
			var errb bytes.Buffer
			c.Stderr = &errb
			c.start(t, func(ns string) { _, err := Populate(rs, ns, r); mustOK(t, err) })
			statusW.Close()
			// For "ran", cat is still running while the status fd
			// reads end-of-file: the exec closed it.
			got, err := io.ReadAll(statusR)
			mustOK(t, err)
			stdin.Close()
			c.Wait()
			if string(got) != tc.report {
				t.Errorf("status fd: %q, want %q (stderr %q)", got, tc.report, errb.String())
			}
			// The caller reports it: the shim does not say it twice.
			if errb.Len() != 0 {
				t.Errorf("stderr: %q, want nothing", errb.String())
			}
		})
	}
}

// TestReportExec checks the shim without a ruleset: it enters no domain,
// execs the workload, and reports a failed exec on the status fd only.
func TestReportExec(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "data")
	mustOK(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct {
		name   string
		args   []string
		report string
		code   int
	}{
		{"cannot exec", []string{notExec}, "exec: \"" + notExec + "\": permission denied\n", 126},
		{"not found", []string{"nosuch-" + filepath.Base(dir)}, "exec: \"nosuch-" + filepath.Base(dir) + "\": executable file not found in $PATH\n", 127},
		// A Landlock domain would make the workload's landlock_restrict_self
		// need no_new_privs: without one, the workload starts unconfined.
		{"ran", []string{"grep", "-q", "NoNewPrivs:\t0", "/proc/self/status"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statusR, statusW, err := os.Pipe()
			mustOK(t, err)
			defer statusR.Close()
			p := &libcontainer.Process{Args: tc.args}
			cleanup, err := ReportExec(p, statusW)
			mustOK(t, err)
			defer cleanup()
			c := exec.Command(p.Args[0], p.Args[1:]...)
			c.ExtraFiles = p.ExtraFiles
			c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
			var errb bytes.Buffer
			c.Stderr = &errb
			mustOK(t, c.Start())
			statusW.Close()
			got, err := io.ReadAll(statusR)
			mustOK(t, err)
			err = c.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				mustOK(t, err)
			}
			if string(got) != tc.report || code != tc.code {
				t.Errorf("status fd %q, exit %d; want %q, exit %d (stderr %q)", got, code, tc.report, tc.code, errb.String())
			}
			if errb.Len() != 0 {
				t.Errorf("stderr: %q, want nothing", errb.String())
			}
		})
	}
	if _, err := ReportExec(&libcontainer.Process{Args: []string{"true"}}, nil); err == nil {
		t.Error("ReportExec without a status file: no error")
	}
}
