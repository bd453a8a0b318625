//go:build cgo && seccomp

package libzone

import (
	"strconv"

	libseccomp "github.com/seccomp/libseccomp-golang"

	"github.com/rauha-runtime/rauha/zone"
)

// syscallNumber is name's number on this architecture.
func syscallNumber(name string) (uint32, bool) {
	nr, err := libseccomp.GetSyscallFromName(name)
	return uint32(nr), err == nil && nr >= 0
}

// syscallName names syscall number nr of this architecture.
func syscallName(nr uint32) string {
	if name, err := libseccomp.ScmpSyscall(nr).GetName(); err == nil {
		return name
	}
	return "syscall " + strconv.FormatUint(uint64(nr), 10)
}

// SyscallChecker is how a policy's [syscalls] deny names are checked: with
// libseccomp, which builds the filter that denies them. A name it cannot
// resolve would make the filter skip the rule.
func SyscallChecker() zone.SyscallKnown {
	return func(name string) bool {
		_, err := libseccomp.GetSyscallFromName(name)
		return err == nil
	}
}
