// execroute runs code without an execve of the file that holds it, the ways
// a zone's exec rules must also stop (tests/bats/execroutes.bats):
//
//	execroute memfd-exec exec|noflags FILE ARGS...
//	    copy FILE into a memfd (memfd_create with MFD_EXEC, or without
//	    flags) and execveat it (fexecve)
//	execroute mmap-exec FILE
//	    write x86-64 code that returns 42 to FILE, map FILE with PROT_EXEC
//	    and call it; prints "ran: 42"
//	execroute mprotect-exec FILE
//	    map FILE (an existing file) readable, then make the mapping
//	    executable with mprotect; prints "mapped executable"
//
// A refused step prints "STEP: ERROR" on stderr and exits 126.
package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: execroute memfd-exec exec|noflags FILE ARGS... | mmap-exec FILE | mprotect-exec FILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "memfd-exec":
		memfdExec(os.Args[2], os.Args[3], os.Args[4:])
	case "mmap-exec":
		mmapExec(os.Args[2])
	case "mprotect-exec":
		mprotectExec(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}

func refused(step string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", step, err)
	os.Exit(126)
}

func memfdExec(flags, file string, args []string) {
	f := 0
	if flags == "exec" {
		f = unix.MFD_EXEC
	}
	fd, err := unix.MemfdCreate("payload", f)
	if err != nil {
		refused("memfd_create", err)
	}
	src, err := os.Open(file)
	if err != nil {
		refused("open", err)
	}
	if _, err := io.Copy(os.NewFile(uintptr(fd), "memfd"), src); err != nil {
		refused("copy", err)
	}
	argv, err := syscall.SlicePtrFromStrings(append([]string{file}, args...))
	if err != nil {
		refused("argv", err)
	}
	envv, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		refused("env", err)
	}
	empty, _ := syscall.BytePtrFromString("")
	_, _, errno := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])), unix.AT_EMPTY_PATH, 0)
	refused("execveat", errno)
}

// ret42 is "mov eax, 42; ret".
var ret42 = []byte{0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3}

func mmapExec(file string) {
	if err := os.WriteFile(file, ret42, 0o644); err != nil {
		refused("write", err)
	}
	fd, err := unix.Open(file, unix.O_RDONLY, 0)
	if err != nil {
		refused("open", err)
	}
	code, err := unix.Mmap(fd, 0, len(ret42), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		refused("mmap", err)
	}
	fmt.Printf("ran: %d\n", call(uintptr(unsafe.Pointer(&code[0]))))
}

// mprotectExec maps file without PROT_EXEC, which no exec rule judges, and
// asks for it afterwards.
func mprotectExec(file string) {
	fd, err := unix.Open(file, unix.O_RDONLY, 0)
	if err != nil {
		refused("open", err)
	}
	m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		refused("mmap", err)
	}
	if err := unix.Mprotect(m, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		refused("mprotect", err)
	}
	fmt.Println("mapped executable")
}
