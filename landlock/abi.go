package landlock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Filesystem access rights, grouped the way Rules talks about them. A
// directory rule grants its rights to everything beneath it; a file rule can
// only carry fileRights.
const (
	accessRead      = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	accessWriteFile = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	accessWriteTree = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER
	accessExec = unix.LANDLOCK_ACCESS_FS_EXECUTE

	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	dirOnlyRights = unix.LANDLOCK_ACCESS_FS_READ_DIR | accessWriteTree
)

// ABI returns the highest Landlock ABI version the running kernel supports,
// or 0 when Landlock is not available (not built in, not in the "lsm=" list,
// or a seccomp filter refuses the syscall).
func ABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// supportedFS is the set of filesystem rights abi knows. IOCTL_DEV (ABI 5) is
// left out on purpose: handling it would forbid ioctls on ttys and other
// devices unless granted again on /dev, and no Rules field asks for it.
func supportedFS(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	r := uint64(accessRead | accessWriteFile | accessWriteTree | accessExec)
	if abi < 2 {
		r &^= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi < 3 {
		r &^= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return r
}

// createRuleset wraps landlock_create_ruleset. The attribute size grows with
// the ABI; passing only the fields in use keeps older kernels (which reject
// unknown non-zero trailing fields, and some any larger size) happy.
func createRuleset(handledFS, scoped uint64) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handledFS, Scoped: scoped}
	size := unsafe.Offsetof(attr.Handled_access_net) // ABI 1-3: handled_access_fs only
	if scoped != 0 {
		size = unsafe.Offsetof(attr.Quiet_access_fs) // ABI 6: up to scoped
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// addPathRule wraps landlock_add_rule for one path-beneath rule.
func addPathRule(ruleset, parent int, allowed uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(parent)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
