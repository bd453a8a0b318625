// sysprobe makes one kernel call that no ordinary image needs, harmlessly,
// so a test can tell whether a seccomp profile lets it reach the kernel.
//
//	sysprobe keyctl    keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): joins a
//	                   new anonymous session keyring of this process only
//	sysprobe add_key   add_key("user", ...) into this process's keyring
//	sysprobe kexec     kexec_load with an undefined flag bit: the kernel
//	                   checks CAP_SYS_BOOT first and then refuses the flag
//	                   with EINVAL, so nothing is ever loaded or unloaded
//
// Prints "ok" and exits 0 when the call succeeds; else prints the errno's
// name (EPERM, ENOSYS, ...) and exits 1.
package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sysprobe keyctl|add_key|kexec")
		os.Exit(2)
	}
	var errno unix.Errno
	ring := unix.KEY_SPEC_PROCESS_KEYRING
	switch os.Args[1] {
	case "keyctl":
		_, _, errno = unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	case "add_key":
		typ, desc := []byte("user\x00"), []byte("rauha-sysprobe\x00")
		payload := []byte("x")
		_, _, errno = unix.Syscall6(unix.SYS_ADD_KEY, uintptr(unsafe.Pointer(&typ[0])), uintptr(unsafe.Pointer(&desc[0])),
			uintptr(unsafe.Pointer(&payload[0])), uintptr(len(payload)), uintptr(ring), 0)
	case "kexec":
		// Bit 15 is no KEXEC_* flag and the architecture bits (16-31) are
		// KEXEC_ARCH_DEFAULT.
		_, _, errno = unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 1<<15, 0, 0)
	default:
		fmt.Fprintf(os.Stderr, "sysprobe: unknown call %q\n", os.Args[1])
		os.Exit(2)
	}
	if errno != 0 {
		fmt.Println(unix.ErrnoName(errno))
		os.Exit(1)
	}
	fmt.Println("ok")
}
