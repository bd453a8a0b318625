package libzone

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
)

// The priming write must reach the kernel's migration path (which is where
// the lock is taken) and move nothing: the kernel answers nil for a thread
// already in the root and EOPNOTSUPP for one whose process lives elsewhere.
// An error such as EINVAL, ESRCH or ENOENT would mean it was refused before
// the lock, and would prime nothing.
func TestPrimeCgroupAttachMovesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: writes to the unified hierarchy's cgroup.threads")
	}
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := primeCgroupAttach(); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
			t.Fatalf("priming write refused before the kernel's migration lock: %v", err)
		}
	}
	after, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatalf("the process changed cgroups:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// From a process in another cgroup the kernel refuses the move (a thread may
// not leave its process's domain), after taking the lock. The child is this
// test binary, started straight into a cgroup of the test's own.
func TestPrimeCgroupAttachFromAnotherCgroup(t *testing.T) {
	if os.Getenv("RAUHA_PRIME_CHILD") != "" {
		primeChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a cgroup")
	}
	dir := filepath.Join(bpf.UnifiedMountpoint(), "rauha-test-prime-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a test cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove test cgroup: %v", err)
		}
	})
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrimeCgroupAttachFromAnotherCgroup$", "-test.v")
	cmd.Env = append(os.Environ(), "RAUHA_PRIME_CHILD="+strings.TrimPrefix(dir, bpf.UnifiedMountpoint()))
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child in %s: %v\n%s", dir, err, out)
	}
	// A child that ran no test would exit 0 too.
	if !strings.Contains(string(out), "--- PASS: TestPrimeCgroupAttachFromAnotherCgroup") {
		t.Fatalf("the child in %s did not run the check:\n%s", dir, out)
	}
}

func primeChild(t *testing.T) {
	want := "0::" + os.Getenv("RAUHA_PRIME_CHILD") + "\n"
	if err := primeCgroupAttach(); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("priming write from a non-root cgroup: got %v, want EOPNOTSUPP from the kernel's migration path", err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(own), want) {
		t.Fatalf("the child left its cgroup: /proc/self/cgroup is\n%s\nwant a line %q", own, want)
	}
}
