package landlock

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
	"golang.org/x/sys/unix"
)

// The test binary doubles as libcontainer's init (re-executed as "<binary>
// init" inside the container) and as a helper program started through the
// shim, selected by RAUHA_LANDLOCK_HELPER.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}

func TestMain(m *testing.M) {
	if h := os.Getenv("RAUHA_LANDLOCK_HELPER"); h != "" {
		os.Exit(helper(h, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper runs one probe inside a domain and prints the errno it got ("ok"
// for success), so the test can assert on the kernel's answer.
func helper(name string, args []string) int {
	var err error
	switch name {
	case "signal":
		pid, _ := strconv.Atoi(args[0])
		err = unix.Kill(pid, 0)
	case "connect-abstract":
		var fd int
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			err = unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + args[0]})
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		return 2
	}
	if err != nil {
		fmt.Println(unix.ErrnoName(err.(unix.Errno)))
		return 1
	}
	fmt.Println("ok")
	return 0
}
