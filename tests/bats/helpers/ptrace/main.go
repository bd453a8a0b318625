// ptrace attaches to a process and detaches again, so a test can tell
// whether the kernel lets the caller trace it.
//
//	ptrace PID      exit 0 when PTRACE_SEIZE succeeds; else the errno on
//	                stderr ("ptrace PID: operation not permitted") and exit 1
package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ptrace PID")
		os.Exit(2)
	}
	pid, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptrace: bad pid %q\n", os.Args[1])
		os.Exit(2)
	}
	// SEIZE does not stop the tracee, and the kernel detaches it when this
	// tracer exits: a success leaves it undisturbed.
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, 0, 0, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "ptrace %d: %v\n", pid, errno)
		os.Exit(1)
	}
	fmt.Printf("traced %d\n", pid)
}
