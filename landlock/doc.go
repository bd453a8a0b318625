// Package landlock is Rauha's fallback enforcement of a zone's filesystem,
// exec and scoping rules where BPF-LSM programs cannot be loaded: each
// container process enters a Landlock domain right before its first
// instruction.
//
// # Where the domain is entered
//
// libcontainer's init pivots the root, mounts, drops capabilities, loads
// seccomp and then calls execve(Args[0]) with no hook in between, and
// Landlock forbids mount and pivot_root once applied. So Wrap makes Args[0] a
// tiny static shim (shim/shim.c, embedded prebuilt) passed as a sealed memfd
// along with the ruleset fd. The shim calls landlock_restrict_self (setting
// no_new_privs only if the process lacks CAP_SYS_ADMIN), closes its fds, does
// the PATH search and execs the workload. It fails closed: if the domain
// cannot be entered it exits 125 without running the workload. A workload
// process whose /proc/<pid>/exe is no longer the shim has therefore entered
// its domain.
//
// # Rule semantics
//
// Landlock can only allow, and a rule on a directory grants its rights to
// everything beneath it, across the mount points beneath it. But the
// directory a file system is mounted on is skipped (the walk goes from the
// mount's root straight to the mount point's parent), so a rule built on the
// bundle's rootfs/tmp does not cover the tmpfs libcontainer mounts there
// (TestRulesOnHiddenMountPointsAreIgnored). Rules are therefore built in the
// container's own view, /proc/<init pid>/root, once the init has mounted
// everything: CreateRuleset, Wrap, start the init, Populate.
//
// By default everything is readable and executable. Writable non-empty
// makes writes possible only beneath those paths (plus writing, not
// creating, files under /dev, which /dev/null and ttys need). ReadOnly
// revokes writes, Deny revokes everything, ExecAllow non-empty allows exec
// only beneath those paths, ExecDeny revokes exec and reading files. The
// nearest rule wins; at the same path a revocation wins.
//
// To revoke a right at a path, no ancestor may grant it, so it is granted on
// every other entry of each ancestor instead (the sibling technique). Entries
// created later in those ancestors get none of those rights: this fails
// closed, and is one more reason Populate runs after libcontainer has
// created the mount points. Revoking a right on a directory also
// takes that right from its ancestors themselves (a denied /secret makes "/"
// unlistable); Summary.Notes says so.
//
// Known limits: rules attach to inodes, so a hard link to a denied file in a
// granted directory stays accessible, and denying the exec of a busybox applet
// symlink denies busybox itself. Landlock does not check mmap(PROT_EXEC), so
// ExecDeny also revokes reading the file (which "ld.so /denied/binary"
// needs), but ExecAllow does not stop the loader from mapping a readable
// binary outside the allowed paths, and ExecAllow must include the dynamic
// loader's directory. Below ABI 3, truncate(2) is not restricted.
// IOCTL_DEV and network rights are not used (egress is cgroup BPF's job).
//
// # Scoping
//
// Every landlock_restrict_self creates a new domain, and a process started by
// "exec" is not a descendant of the init, so it lands in a sibling domain:
// with ScopeSignals it could not signal the init ("docker exec c kill -HUP 1"
// fails) and the init could not signal it. Landlock has no way to join an
// existing domain. Signals only reach other zones when the pid namespace is
// shared (with the host or another container) and abstract unix sockets only
// when the network namespace is, so callers should set ScopeSignals only for
// containers that share a pid namespace and ScopeAbstractUnix only for those
// that share a network namespace; private namespaces already give that
// isolation structurally without the exec cost.
package landlock
