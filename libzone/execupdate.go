package libzone

// A zone update that gives a zone exec rules reaches its running members'
// code routes (execroutes.go) the way it reaches their file rules
// (fileguardupdate.go): through their mount namespaces, and through their
// pid namespaces for memfds. On both backends:
//
//   - every mount the member can write to (not read-only, not proc, sysfs
//     or cgroup) in its mount table is made noexec where it is, its other
//     flags kept (mount_setattr, as mount -o remount,bind,noexec): the
//     processes already running have the Landlock domain of the old policy,
//     which may let them write on any writable mount, so the member's own
//     mounts decide, not the new policy's writable_paths. A file written or
//     copied there, or held open from before the update, no longer runs
//     (execve EACCES, mmap(PROT_EXEC) EPERM). A writable root cannot be made
//     noexec without stopping every binary: such a member is named, as
//     strict admission refuses it at create.
//   - vm.memfd_noexec is raised to 2 in the member's pid namespace, from a
//     child that joins it (pidns.SetMemfdNoexec): memfds made afterwards
//     cannot be executed. A member without a pid namespace of its own, or
//     a kernel before 6.6, would need seccomp to deny memfd_create, which
//     cannot be added to a running process: the member is named.
//
// On the fallback, a new exec.deny file gets the null device bound on it
// read-only and nodev, as a new denied file does (the Landlock domain of a
// member made with the rule would not let it be read either): open and
// execve fail with EACCES. A new exec.deny directory gets a noexec copy of
// itself (execve EACCES, mmap(PROT_EXEC) EPERM; reading stays allowed). On
// bpf-lsm the deny list is judged for running processes already.
//
// What stays: an exec.allow list is a Landlock domain, which a running
// process keeps; it may still run the image's binaries outside the new
// list until the container is recreated (zoneLimits names it). A memfd
// made before the update keeps the seal it was made with.

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/pidns"
	"github.com/rauha-runtime/rauha/zone"
)

// closeRunningExec closes the code routes of running member m under policy
// p, which has exec rules; old is the zone's policy before the update. lsm
// says whether the bpf-lsm backend judges exec.deny for running processes.
func closeRunningExec(m RunningMember, old, p *zone.Policy, lsm bool) error {
	if !hasExecRules(p) {
		return nil
	}
	v, err := openMember(m)
	if err != nil || v == nil {
		return err
	}
	defer v.close()

	// What cannot be closed is named by the update that brings the exec
	// rules, as admission names it at create; verify fails it after.
	var problems []string
	newly := !hasExecRules(old)
	if newly && keepsCap(m.Config, p, "CAP_SYS_ADMIN") {
		problems = append(problems, "exec: CAP_SYS_ADMIN can remount a writable path exec (recreate the container without the capability)")
	}
	// The masks of new exec.deny paths, then the writable mounts made
	// noexec: each step is tried whatever the other gave.
	var ops []guardOp
	if !lsm {
		for _, d := range p.Exec.Deny {
			if slices.Contains(old.Exec.Deny, d) || d == "/" {
				continue // the Landlock domains hold it (or nothing would run)
			}
			op, err := execDenyOp(v, d)
			if err != nil {
				return fmt.Errorf("exec.deny %s: %w", d, err)
			}
			if op != nil {
				ops = append(ops, *op)
			}
		}
	}
	if len(ops) > 0 {
		if err := mountInMember(v.nsfd, v.root, v.mounts, ops); err != nil {
			problems = append(problems, err.Error())
		}
	}
	targets, rootWritable := noexecTargets(v.mounts)
	if rootWritable && newly {
		problems = append(problems, "exec: its root file system is writable, so a binary written anywhere could run (a writable root cannot be made noexec; set writable_paths, or root.readonly, and recreate the container)")
	}
	ops = ops[:0]
	for _, t := range targets {
		ops = append(ops, guardOp{t, guardNoexec})
	}
	if len(ops) > 0 {
		if err := mountInMember(v.nsfd, v.root, v.mounts, ops); err != nil {
			problems = append(problems, err.Error())
		}
	}
	switch {
	case memfdBySysctl(m.Config):
		if cur, err := pidns.MemfdNoexec(m.Pid); err != nil {
			problems = append(problems, err.Error())
		} else if cur < 2 {
			if err := forbidMemfdExec(m.Pid); err != nil {
				problems = append(problems, err.Error())
			}
		}
	case newly && !memfdDenied(m.Config):
		problems = append(problems, "exec: memfd_create stays allowed to its processes: vm.memfd_noexec cannot be raised for it alone (it shares a pid namespace, or Linux is older than 6.6) and a running process's seccomp filter cannot gain a rule (recreate the container)")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// noexecTargets are the mount points, in a member's mount table, of the
// mounts a file can be written to that are not noexec yet: the topmost
// mount at each mount point, when it is neither read-only (itself or its
// file system) nor of a type that holds no file. rootWritable reports a
// writable root, which is not among them.
func noexecTargets(mounts []*mountinfo.Info) (targets []string, rootWritable bool) {
	for _, m := range mounts {
		if topMount(mounts, m.Mountpoint) != m {
			continue // covered by a later mount at the same place
		}
		if mountHas(m, "ro") || slices.Contains(strings.Split(m.VFSOptions, ","), "ro") || slices.Contains(fileless, m.FSType) {
			continue
		}
		if m.Mountpoint == "/" {
			rootWritable = true
			continue
		}
		if !mountHas(m, "noexec") {
			targets = append(targets, m.Mountpoint)
		}
	}
	return targets, rootWritable
}

// execDenyOp is the mount that denies new exec.deny path d to running
// processes: the null device on a file, a noexec copy of a directory; nil
// when d is missing (a file put there later is on a noexec mount if the
// container could write it) or already held.
func execDenyOp(v *memberView, d string) (*guardOp, error) {
	st, err := statIn(v.root, strings.TrimPrefix(path.Clean(d), "/"))
	if err != nil || st == nil {
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if t := topMount(v.mounts, path.Clean(d)); t != nil && mountHas(t, "noexec") {
			return nil, nil
		}
		return &guardOp{d, guardNoexecCopy}, nil
	case unix.S_IFCHR:
		if st.Rdev == unix.Mkdev(1, 3) {
			return nil, nil // the null device already: masked
		}
	}
	return &guardOp{d, guardNull}, nil
}
