package libzone

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
)

// primeCgroupAttach starts, in the background, the wait that the kernel
// would otherwise impose on libcontainer's first cgroup.procs write of this
// command.
//
// Every migration into a cgroup (a write of a pid to cgroup.procs, tasks or
// cgroup.threads, in any hierarchy) takes the global cgroup_threadgroup_rwsem
// for writing. After a quiet spell that lock first waits for a full RCU grace
// period (rcu_sync_enter), and stays cheap until about one grace period after
// the last writer left. On this host a grace period takes 0-20 ms (perf sched:
// `synchronize_rcu_normal <- rcu_sync_enter <- percpu_down_write <-
// cgroup_procs_write_start`), and libcontainer makes that write right after
// forking the init, with the init blocked until it returns. runc 1.1.5 and
// 1.5.0 pay it too (traced in their run). Exec writes cgroup.procs as well,
// except on a pure v2 host, where libcontainer uses CLONE_INTO_CGROUP and
// Exec does not prime.
// Started in a goroutine once launch is past the refusals that need no more
// than a stat, the grace period runs while rauha stores the zone, opens the
// enforcer and forks the init.
//
// The price is the one every migration has: until about one grace period
// after the lock was released, forks and exits on the host take the
// lock's slower reader path, as they do after libcontainer's own write.
//
// The write asks to move the calling thread into the unified hierarchy's
// root, which changes nothing: a thread of a process in any other (domain)
// cgroup may not leave its process's domain, so the kernel refuses it with
// EOPNOTSUPP once it holds the lock, and a thread already in the root stays
// where it is. The thread is locked and never unlocked, so it ends with the
// calling goroutine: run it in one of its own (go primeCgroupAttach()). On a
// cgroup2 mounted with favordynmods the kernel keeps the lock in its slow
// mode and should not wait at all (not tried here).
//
// It returns nil or EOPNOTSUPP when the kernel took the lock; callers
// never wait for it.
func primeCgroupAttach() error {
	runtime.LockOSThread()
	f, err := os.OpenFile(filepath.Join(bpf.UnifiedMountpoint(), "cgroup.threads"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(strconv.Itoa(unix.Gettid()))
	return err
}
