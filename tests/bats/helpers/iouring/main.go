// iouring reaches files through io_uring requests instead of syscalls: a
// zone's file rules must hold for them too, and their denials must be
// reported although no syscall fails.
//
//	iouring open PATH [write]   IORING_OP_OPENAT, O_RDONLY (prints the file's
//	                            content) or O_WRONLY|O_APPEND (appends "pwned")
//	iouring unlink PATH         IORING_OP_UNLINKAT
//	iouring rename OLD NEW      IORING_OP_RENAMEAT
//	iouring mkdir PATH          IORING_OP_MKDIRAT
//
// It prints "res N", the completion's result (a negative errno on failure),
// and exits 0 whatever the result; 2 when the ring itself cannot be used
// (io_uring_setup refused, say).
package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/uring"
)

func main() {
	a := os.Args[1:]
	if len(a) < 2 {
		usage()
	}
	path, addr := uring.CString(a[1])
	e := uring.SQE{Fd: unix.AT_FDCWD, Addr: addr}
	keep := []any{path}
	switch {
	case a[0] == "open" && len(a) == 2:
		e.Opcode, e.OpFlags = uring.OpOpenat, unix.O_RDONLY|unix.O_CLOEXEC
	case a[0] == "open" && len(a) == 3 && a[2] == "write":
		e.Opcode, e.OpFlags = uring.OpOpenat, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC
	case a[0] == "unlink" && len(a) == 2:
		e.Opcode = uring.OpUnlinkat
	case a[0] == "mkdir" && len(a) == 2:
		e.Opcode, e.Len = uring.OpMkdirat, 0o755
	case a[0] == "rename" && len(a) == 3:
		to, toAddr := uring.CString(a[2])
		cwd := int32(unix.AT_FDCWD)
		e.Opcode, e.Len, e.Off = uring.OpRenameat, uint32(cwd), toAddr
		keep = append(keep, to)
	default:
		usage()
	}
	res, err := uring.Do(e, keep...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("res %d\n", res)
	if e.Opcode != uring.OpOpenat || res < 0 {
		return
	}
	f := os.NewFile(uintptr(res), a[1])
	if e.OpFlags&unix.O_WRONLY != 0 {
		_, err = f.WriteString("pwned\n")
	} else {
		_, err = io.Copy(os.Stdout, f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: iouring open PATH [write] | unlink PATH | rename OLD NEW | mkdir PATH")
	os.Exit(2)
}
