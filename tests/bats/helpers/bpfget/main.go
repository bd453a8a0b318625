// bpfget opens a pinned BPF object with bpf(BPF_OBJ_GET), read-write, as a
// process that wants to change a map would, and closes it again, so a test
// can tell whether the kernel (or a seccomp filter) lets the caller reach
// the object. It changes nothing.
//
//	bpfget PATH     exit 0 and "opened PATH" when the call succeeds; else the
//	                errno on stderr ("bpfget PATH: operation not permitted")
//	                and exit 1
package main

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// objGetAttr is the BPF_OBJ_GET part of union bpf_attr.
type objGetAttr struct {
	pathname  uint64
	bpfFD     uint32
	fileFlags uint32
}

const bpfObjGet = 7

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bpfget PATH")
		os.Exit(2)
	}
	path, err := unix.BytePtrFromString(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bpfget: bad path %q\n", os.Args[1])
		os.Exit(2)
	}
	attr := objGetAttr{pathname: uint64(uintptr(unsafe.Pointer(path)))}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, bpfObjGet, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(path)
	if errno != 0 {
		fmt.Fprintf(os.Stderr, "bpfget %s: %v\n", os.Args[1], errno)
		os.Exit(1)
	}
	unix.Close(int(fd))
	fmt.Printf("opened %s\n", os.Args[1])
}
