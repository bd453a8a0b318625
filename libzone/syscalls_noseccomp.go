//go:build !(cgo && seccomp)

package libzone

import (
	"strconv"

	"github.com/rauha-runtime/rauha/zone"
)

// Without libseccomp syscalls are not known by name: a learning zone
// records none of its base policy's denied syscalls.
func syscallNumber(string) (uint32, bool) { return 0, false }

func syscallName(nr uint32) string { return "syscall " + strconv.FormatUint(uint64(nr), 10) }

// SyscallChecker is nil without libseccomp (a build without the seccomp
// tag): names are checked by form only, and no filter is built either.
func SyscallChecker() zone.SyscallKnown { return nil }
