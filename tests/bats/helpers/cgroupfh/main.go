// cgroupfh reaches a cgroup directory by its file handle, the way a task in
// a cgroup namespace can reach cgroups outside the namespace root.
//
//	cgroupfh handle DIR        print DIR's handle as "TYPE:HEX" (run on the host)
//	cgroupfh join MOUNT HANDLE CMD...
//	                           open the cgroup HANDLE names through MOUNT (a
//	                           cgroup2 mount) with open_by_handle_at, write
//	                           its own pid into that cgroup.procs and exec
//	                           CMD (it runs where the move put it); on
//	                           failure the step and errno on stderr, exit 1
//	cgroupfh setns NSFILE CMD...
//	                           enter the cgroup namespace NSFILE (another
//	                           process's /proc/PID/ns/cgroup) and exec CMD
package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == "handle":
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, os.Args[2], 0)
		if err != nil {
			fail("name_to_handle_at %s: %v", os.Args[2], err)
		}
		fmt.Printf("%d:%s\n", h.Type(), hex.EncodeToString(h.Bytes()))
	case len(os.Args) > 4 && os.Args[1] == "join":
		join(os.Args[2], os.Args[3])
		execArgs(os.Args[4:])
	case len(os.Args) > 3 && os.Args[1] == "setns":
		// The namespace is the thread's until the exec makes it the
		// process's.
		runtime.LockOSThread()
		fd, err := unix.Open(os.Args[2], unix.O_RDONLY, 0)
		if err != nil {
			fail("open %s: %v", os.Args[2], err)
		}
		if err := unix.Setns(fd, unix.CLONE_NEWCGROUP); err != nil {
			fail("setns %s: %v", os.Args[2], err)
		}
		execArgs(os.Args[3:])
	default:
		fmt.Fprintln(os.Stderr, "usage: cgroupfh handle DIR | cgroupfh join MOUNT TYPE:HEX CMD... | cgroupfh setns NSFILE CMD...")
		os.Exit(2)
	}
}

func join(mount, handle string) {
	typ, raw, ok := strings.Cut(handle, ":")
	t, err := strconv.ParseInt(typ, 10, 32)
	b, err2 := hex.DecodeString(raw)
	if !ok || err != nil || err2 != nil {
		fail("bad handle %q", handle)
	}
	mfd, err := unix.Open(mount, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		fail("open %s: %v", mount, err)
	}
	dir, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(int32(t), b), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		fail("open_by_handle_at: %v", err)
	}
	fd, err := unix.Openat(dir, "cgroup.procs", unix.O_WRONLY, 0)
	if err != nil {
		fail("open cgroup.procs: %v", err)
	}
	if _, err := unix.Write(fd, []byte(strconv.Itoa(os.Getpid()))); err != nil {
		fail("write cgroup.procs: %v", err)
	}
}

func execArgs(args []string) {
	path, err := exec.LookPath(args[0])
	if err != nil {
		fail("%v", err)
	}
	fail("exec %s: %v", path, unix.Exec(path, args, os.Environ()))
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "cgroupfh: "+format+"\n", a...)
	os.Exit(1)
}
