//go:build cgo && seccomp

package libzone

import (
	libseccomp "github.com/seccomp/libseccomp-golang"

	"github.com/rauha-runtime/rauha/zone"
)

// SyscallChecker is how a policy's [syscalls] deny names are checked: with
// libseccomp, which builds the filter that denies them. A name it cannot
// resolve would make the filter skip the rule.
func SyscallChecker() zone.SyscallKnown {
	return func(name string) bool {
		_, err := libseccomp.GetSyscallFromName(name)
		return err == nil
	}
}
