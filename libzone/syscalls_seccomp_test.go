//go:build cgo && seccomp

package libzone

import "testing"

func TestSyscallChecker(t *testing.T) {
	known := SyscallChecker()
	for _, name := range []string{"ptrace", "kexec_load", "open_by_handle_at", "bpf"} {
		if !known(name) {
			t.Errorf("libseccomp does not know %q", name)
		}
	}
	for _, name := range []string{"ptarce", "kexec", "no_such_syscall"} {
		if known(name) {
			t.Errorf("libseccomp knows %q", name)
		}
	}
}
