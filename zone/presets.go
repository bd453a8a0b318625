package zone

import (
	"fmt"
	"strings"
)

// Preset names, in the order PresetNames lists them.
const (
	PresetStrict     = "strict"
	PresetStandard   = "standard"
	PresetPrivileged = "privileged"
	PresetAudit      = "audit"
)

// PresetNames lists the built-in policies.
func PresetNames() []string {
	return []string{PresetStrict, PresetStandard, PresetPrivileged, PresetAudit}
}

// Preset returns a fresh copy of a built-in policy.
func Preset(name string) (*Policy, error) {
	switch name {
	case PresetStrict:
		return strictPreset(ModeEnforce, AdmissionStrict), nil
	case PresetStandard:
		return standardPreset(), nil
	case PresetPrivileged:
		return privilegedPreset(), nil
	case PresetAudit:
		return strictPreset(ModeAudit, AdmissionAudit), nil
	}
	return nil, fmt.Errorf("unknown policy preset %q (presets: %s)", name, strings.Join(PresetNames(), ", "))
}

// standardPreset is what a container without annotations gets, so it must not
// break ordinary images (busybox, debian: package installs, servers, shells,
// compilers):
//   - capabilities: exactly what the container's spec asks for — clients
//     express --cap-add, --cap-drop and --privileged there, and a drop-in
//     runtime must honour them (a zone that wants fewer says so);
//   - filesystem, exec, devices: no rules beyond the OCI spec;
//   - network egress unrestricted. Cloud metadata addresses (169.254.169.254,
//     fd00:ec2::254) stay reachable: allowed_egress is an allow-list and has
//     no deny form, and an allow-list of "everything but them" would be
//     a rule set the size of the address space;
//   - syscalls: those of standardDeniedSyscalls fail with EPERM, whatever the
//     capabilities;
//   - signals and ptrace only within the zone;
//   - enforce, but admission audit: a kernel that cannot enforce a control
//     still runs the workload and says which control is missing.
func standardPreset() *Policy {
	return &Policy{
		Zone:     ZoneSettings{Mode: ModeEnforce, Admission: AdmissionAudit},
		Syscalls: Syscalls{Deny: standardDeniedSyscalls()},
	}
}

// standardDeniedSyscalls lists (in a fresh slice) the calls that reach kernel
// state no zone can contain and that no ordinary image uses. A workload that
// needs one asks for the privileged preset; --privileged or --cap-add alone
// does not lift these rules, since standard keeps the capabilities the client
// asked for and the capabilities are what these calls check otherwise.
//   - kexec_load, kexec_file_load: replace the running kernel;
//   - init_module, finit_module, delete_module: load or unload kernel code;
//   - keyctl, add_key, request_key: the kernel keyrings are not namespaced,
//     so the user keyrings of a uid are shared with the host (docker's
//     default seccomp profile denies them too);
//   - userfaultfd: stalls a page fault at a moment the caller chooses, the
//     classic way to widen a kernel race (docker allows it only with
//     CAP_SYS_PTRACE; the vm.unprivileged_userfaultfd sysctl only narrows it
//     to faults in user mode);
//   - perf_event_open: a large kernel attack surface and a side channel on
//     other tasks of the host (docker allows it only with CAP_PERFMON or
//     CAP_SYS_ADMIN);
//   - open_by_handle_at: opens any inode of a mounted file system by its
//     handle, bypassing the container's root (the "shocker" escape; docker
//     allows it only with CAP_DAC_READ_SEARCH).
//
// Deliberately not denied:
//   - mount, umount2, pivot_root: they need CAP_SYS_ADMIN, which a container
//     has only when its client asked for it, and then it needs them (docker
//     --privileged, FUSE, build tools);
//   - unshare, clone with new namespaces: unprivileged user namespaces are
//     how ordinary software sandboxes itself (browsers, bubblewrap, rootless
//     image builders);
//   - bpf: the zone has its own rule for it (members without CAP_BPF or
//     CAP_SYS_ADMIN get EPERM), and a member that has them was given them
//     on purpose.
func standardDeniedSyscalls() []string {
	return []string{
		"add_key", "delete_module", "finit_module", "init_module", "kexec_file_load",
		"kexec_load", "keyctl", "open_by_handle_at", "perf_event_open", "request_key",
		"userfaultfd",
	}
}

// strictPreset (and audit, which is the same rules with mode and admission
// audit) is for untrusted workloads:
//   - no capabilities;
//   - the root file system is read-only except /tmp, /dev/shm and the
//     character devices every shell writes to (/dev/null, /dev/zero,
//     /dev/full, the terminal);
//   - no network egress at all, loopback included: in the host network
//     namespace loopback reaches host daemons;
//   - the syscalls standard denies: with no capabilities most of them fail
//     anyway, but the keyrings, userfaultfd and perf_event_open do not need
//     one, and strict must never allow what standard denies;
//   - signals and ptrace only within the zone;
//   - admission strict: refuse to start when a control cannot be enforced.
//
// There is deliberately no filesystem deny list (e.g. /proc/kcore): the OCI
// masked paths already hide those files, and a deny rule under a readable tree
// cannot be expressed by the Landlock fallback, so strict admission would
// refuse every container on kernels without BPF LSM.
func strictPreset(mode, admission string) *Policy {
	return &Policy{
		Zone:         ZoneSettings{Mode: mode, Admission: admission},
		Capabilities: Capabilities{Allowed: List()},
		Filesystem: Filesystem{WritablePaths: List(
			"/dev/full", "/dev/null", "/dev/pts", "/dev/shm", "/dev/tty", "/dev/zero", "/tmp",
		)},
		Network:  Network{AllowedEgress: List()},
		Syscalls: Syscalls{Deny: standardDeniedSyscalls()},
	}
}

// privilegedPreset is for workloads that administer the host or the kernel
// (module loaders, kexec tools, profilers, nested runtimes): it keeps
// everything the OCI spec grants, denies no syscall and restricts no egress.
// Only signal and ptrace isolation between zones remains, since a zone's
// members must not reach the tasks of other zones whatever they run.
// Admission audit, since it asks for almost nothing that could be unavailable.
func privilegedPreset() *Policy {
	return &Policy{Zone: ZoneSettings{Mode: ModeEnforce, Admission: AdmissionAudit}}
}
