// Package pidns reads and raises vm.memfd_noexec in another process's pid
// namespace.
//
// Since Linux 6.3 vm.memfd_noexec is kept per pid namespace, and
// /proc/sys/vm/memfd_noexec reads and writes the value of the pid namespace
// of the task that calls read or write, whatever procfs instance the file
// belongs to: rauha cannot reach a container's value through the container's
// /proc. Only a task in that namespace can, and setns(CLONE_NEWPID) moves
// only the children created afterwards. So a child of rauha joins the
// namespace and starts another, which runs in it and reads or writes the file
// of the host's /proc. Both children run C only, never Go code.
package pidns

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define STACK 16384

struct job {
	int nsfd;
	int value; // < 0: read
	int result; // value read, 0 after a write, or 100 + failed step
	int err;
	char outer_stack[STACK] __attribute__((aligned(16)));
	char inner_stack[STACK] __attribute__((aligned(16)));
};

// inner runs in the target pid namespace: it reads or writes the sysctl.
static int inner(void *arg) {
	struct job *j = arg;
	int fd = open("/proc/sys/vm/memfd_noexec", j->value < 0 ? O_RDONLY : O_WRONLY);
	if (fd < 0) {
		j->err = errno;
		j->result = 103;
		return 0;
	}
	char b[8];
	if (j->value < 0) {
		ssize_t n = read(fd, b, sizeof(b));
		if (n < 1 || b[0] < '0' || b[0] > '9') {
			j->err = n < 0 ? errno : EINVAL;
			j->result = 104;
		} else {
			j->result = b[0] - '0';
		}
	} else {
		b[0] = '0' + j->value % 10;
		b[1] = '\n';
		if (write(fd, b, 2) != 2) {
			j->err = errno;
			j->result = 105;
		} else {
			j->result = 0;
		}
	}
	close(fd);
	return 0;
}

// outer joins the pid namespace, which only its children enter.
static int outer(void *arg) {
	struct job *j = arg;
	if (setns(j->nsfd, CLONE_NEWPID) < 0) {
		j->err = errno;
		j->result = 101;
		return 0;
	}
	pid_t pid = clone(inner, j->inner_stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, j);
	if (pid < 0) {
		j->err = errno;
		j->result = 102;
		return 0;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

// rauha_memfd_noexec reads (value < 0) or writes vm.memfd_noexec in the pid
// namespace nsfd. The children share this process's memory (CLONE_VM, the
// way posix_spawn starts a child) and this thread waits while they run
// (CLONE_VFORK): no page tables are copied. With every signal blocked, no
// Go signal handler can run on their stacks.
static int rauha_memfd_noexec(int nsfd, int value, int *err) {
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		*err = ENOMEM;
		return -1;
	}
	j->nsfd = nsfd;
	j->value = value;
	j->result = -1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(outer, j->outer_stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, j);
	int cloneErr = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	int result;
	if (pid < 0) {
		*err = cloneErr;
		result = -1;
	} else {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		*err = j->err;
		result = j->result;
	}
	free(j);
	return result;
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

// steps names the failing step of a result 100+n.
var steps = map[int]string{
	1: "setns(CLONE_NEWPID)",
	2: "clone",
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
// kernel refuses a value below the parent namespace's. It refuses a pid in
// the caller's own pid namespace: that would change the host's value.
func SetMemfdNoexec(pid, value int) error {
	if value < 0 || value > 9 {
		return fmt.Errorf("vm.memfd_noexec=%d: out of range", value)
	}
	var self, target unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &self); err != nil {
		return fmt.Errorf("set vm.memfd_noexec: %w", err)
	}
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &target); err != nil {
		return fmt.Errorf("set vm.memfd_noexec in the pid namespace of pid %d: %w", pid, err)
	}
	if self.Dev == target.Dev && self.Ino == target.Ino {
		return fmt.Errorf("set vm.memfd_noexec in the pid namespace of pid %d: it is this process's own, refused", pid)
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
		return 0, fmt.Errorf("%s vm.memfd_noexec in the pid namespace of pid %d: clone: %w", what, pid, syscall.Errno(cerr))
	case st >= 100 && steps[st-100] != "":
		return 0, fmt.Errorf("%s vm.memfd_noexec in the pid namespace of pid %d: %s: %w", what, pid, steps[st-100], syscall.Errno(cerr))
	case st > 9:
		return 0, fmt.Errorf("%s vm.memfd_noexec in the pid namespace of pid %d: no result from the child (%d)", what, pid, st)
	}
	return st, nil
}
