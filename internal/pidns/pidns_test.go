package pidns

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMemfdNoexecOwnNamespace raises vm.memfd_noexec in a new pid namespace
// and reads it back there, while the host's value stays what it was.
func TestMemfdNoexecOwnNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (unshare --pid)")
	}
	if !Supported() {
		t.Skip("no vm.memfd_noexec (Linux < 6.3)")
	}
	host, err := MemfdNoexec(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("unshare:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The sleep is unshare's child, in the new namespace.
	var child int
	for range 100 {
		b, _ := os.ReadFile("/proc/" + itoa(cmd.Process.Pid) + "/task/" + itoa(cmd.Process.Pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			child = atoi(f[0])
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("unshare started no child")
	}
	if err := SetMemfdNoexec(child, 2); err != nil {
		t.Fatal(err)
	}
	if v, err := MemfdNoexec(child); err != nil || v != 2 {
		t.Fatalf("after set: %d, %v; want 2", v, err)
	}
	if v, err := MemfdNoexec(os.Getpid()); err != nil || v != host {
		t.Fatalf("host value %d, %v; want it unchanged (%d)", v, err, host)
	}
	if err := SetMemfdNoexec(cmd.Process.Pid, 2); err == nil {
		t.Fatal("set in unshare's (the host's) pid namespace was not refused")
	}
	if v, _ := MemfdNoexec(os.Getpid()); v != host {
		t.Fatalf("host value %d after a refused set, want %d", v, host)
	}
	if _, err := MemfdNoexec(1 << 30); err == nil {
		t.Fatal("no error for a pid that does not exist")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
