// Package pidns reads and raises vm.memfd_noexec in another process's pid
// namespace.
//
// Since Linux 6.3 vm.memfd_noexec is kept per pid namespace, and
// /proc/sys/vm/memfd_noexec reads and writes the value of the pid namespace
// of the task that calls read or write, whatever procfs instance the file
// belongs to: rauha cannot reach a container's value through the container's
// /proc. Only a task in that namespace can, and setns(CLONE_NEWPID) moves
// only the children created afterwards. So a forked child of rauha joins the
// namespace, forks again, and that grandchild, which runs in it, reads or
// writes the file of the host's /proc. Both children run C only
// (async-signal-safe calls between fork and _exit), never Go code.
package pidns

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

// In the grandchild: exit status = value read (0-9), 0 after a write, or
// 100 + step on failure with the errno written to errfd.
static void fail(int errfd, int step) {
	int e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(100 + step);
}

static int wait_status(pid_t pid) {
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

// rauha_memfd_noexec runs in a child placed in the pid namespace nsfd.
// value < 0 reads vm.memfd_noexec there, value >= 0 writes it. It returns
// the child's exit status (see fail) or -1; *err gets the errno.
static int rauha_memfd_noexec(int nsfd, int value, int *err) {
	int p[2];
	*err = 0;
	if (pipe2(p, O_CLOEXEC) < 0) {
		*err = errno;
		return -1;
	}
	// No Go signal handler may run in the children: they share nothing
	// with the Go runtime but its handlers.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (setns(nsfd, CLONE_NEWPID) < 0)
			fail(p[1], 1);
		pid_t c = fork();
		if (c < 0)
			fail(p[1], 2);
		if (c == 0) {
			int fd = open("/proc/sys/vm/memfd_noexec", value < 0 ? O_RDONLY : O_WRONLY);
			if (fd < 0)
				fail(p[1], 3);
			char b[8];
			if (value < 0) {
				ssize_t n = read(fd, b, sizeof(b));
				if (n < 1)
					fail(p[1], 4);
				if (b[0] < '0' || b[0] > '9') {
					errno = EINVAL;
					fail(p[1], 4);
				}
				_exit(b[0] - '0');
			}
			b[0] = '0' + (value % 10);
			b[1] = '\n';
			if (write(fd, b, 2) != 2)
				fail(p[1], 5);
			_exit(0);
		}
		_exit(wait_status(c));
	}
	int saved = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		*err = saved;
		return -1;
	}
	int st = wait_status(pid);
	if (st >= 100 && read(p[0], err, sizeof(*err)) != sizeof(*err))
		*err = 0;
	close(p[0]);
	return st;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// steps names the failing step of an exit status 100+n.
var steps = map[int]string{
	1: "setns(CLONE_NEWPID)",
	2: "fork",
	3: "open /proc/sys/vm/memfd_noexec",
	4: "read /proc/sys/vm/memfd_noexec",
	5: "write /proc/sys/vm/memfd_noexec",
}

// Supported reports whether vm.memfd_noexec=2 holds on this kernel: Linux
// 6.3 added it, and until 6.6 memfd_create(MFD_EXEC) still got through.
func Supported() bool {
	if _, err := os.Stat("/proc/sys/vm/memfd_noexec"); err != nil {
		return false
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || major == 6 && minor >= 6
}

// MemfdNoexec reads vm.memfd_noexec in the pid namespace of pid: 0 allows
// executable memfds, 1 makes memfd_create seal new memfds non-executable
// unless MFD_EXEC is asked for, 2 also refuses MFD_EXEC (EACCES).
func MemfdNoexec(pid int) (int, error) {
	return run(pid, -1)
}

// SetMemfdNoexec writes vm.memfd_noexec in the pid namespace of pid. The
// kernel refuses a value below the parent namespace's.
func SetMemfdNoexec(pid, value int) error {
	if value < 0 || value > 9 {
		return fmt.Errorf("vm.memfd_noexec=%d: out of range", value)
	}
	_, err := run(pid, value)
	return err
}

func run(pid, value int) (int, error) {
	ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		return 0, fmt.Errorf("vm.memfd_noexec of pid %d: %w", pid, err)
	}
	defer ns.Close()
	var cerr C.int
	st := int(C.rauha_memfd_noexec(C.int(ns.Fd()), C.int(value), &cerr))
	what := "read"
	if value >= 0 {
		what = "set"
	}
	switch {
	case st < 0:
		return 0, fmt.Errorf("%s vm.memfd_noexec in the pid namespace of pid %d: fork: %w", what, pid, syscall.Errno(cerr))
	case st >= 100 && steps[st-100] != "":
		return 0, fmt.Errorf("%s vm.memfd_noexec in the pid namespace of pid %d: %s: %w", what, pid, steps[st-100], syscall.Errno(cerr))
	case st > 9:
		return 0, fmt.Errorf("%s vm.memfd_noexec in the pid namespace of pid %d: the child ended with status %d", what, pid, st)
	}
	return st, nil
}
