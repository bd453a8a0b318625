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
//   - network egress unrestricted except the cloud metadata addresses
//     (standardDeniedEgress);
//   - syscalls: those of standardDeniedSyscalls fail with EPERM, whatever the
//     capabilities;
//   - signals and ptrace only within the zone (the cross-zone rules every
//     zone has: a zone's tasks never reach another zone's);
//   - bpf(2): members without CAP_BPF or CAP_SYS_ADMIN get EPERM, as in
//     every zone (the pinned maps enforce all zones of the root);
//   - enforce, but admission audit: a kernel that cannot enforce a control
//     still runs the workload and says which control is missing.
func standardPreset() *Policy {
	return &Policy{
		Zone:     ZoneSettings{Mode: ModeEnforce, Admission: AdmissionAudit},
		Network:  Network{DeniedEgress: standardDeniedEgress()},
		Syscalls: Syscalls{Deny: standardDeniedSyscalls()},
	}
}

// standardDeniedEgress lists (in a fresh slice) the destinations standard
// denies: the instance metadata services of cloud hosts. They hand out the
// credentials of the host's cloud identity to whoever asks from the host,
// a container included (the classic SSRF to cloud takeover), and an image
// has no business with the host's identity. Every port, since the services
// answer on 80 and some proxies on others.
//   - 169.254.169.254: AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle and
//     most others;
//   - fd00:ec2::254: AWS over IPv6;
//   - fe80::a9fe:a9fe: OpenStack over IPv6 (169.254.169.254 in link-local
//     IPv6 form).
//
// Deliberately not denied:
//   - the rest of 169.254.0.0/16 and fe80::/10: link-local is where some
//     CNIs put the gateway (Calico's 169.254.1.1), where AWS answers DNS
//     (169.254.169.253) and NTP (169.254.169.123), and where ECS serves a
//     task its own credentials (169.254.170.2): denying it breaks ordinary
//     containers there;
//   - 100.100.100.200 (Alibaba Cloud): it lies in 100.64.0.0/10, shared
//     address space that carrier NAT, Tailscale and pod networks hand to
//     ordinary peers;
//   - 168.63.129.16 (Azure's wire server): it is also Azure's DNS resolver.
//
// A policy that needs one of these (a node agent, a cloud CLI using the
// host's identity) asks for the privileged preset or writes its own
// denied_egress.
func standardDeniedEgress() []string {
	return []string{"169.254.169.254/32", "fd00:ec2::254/128", "fe80::a9fe:a9fe/128"}
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
//     on purpose;
//   - ptrace, process_vm_readv/writev, kill: they reach only the zone's own
//     tasks (the cross-zone rules), and debuggers and supervisors need them
//     within it.
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
//     namespace loopback reaches host daemons; and the metadata addresses
//     denied as under standard, so that a policy written from strict that
//     opens egress still keeps them out unless it says otherwise;
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
		Network:  Network{AllowedEgress: List(), DeniedEgress: standardDeniedEgress()},
		Syscalls: Syscalls{Deny: standardDeniedSyscalls()},
	}
}

// privilegedPreset is for workloads that administer the host or the kernel
// (module loaders, kexec tools, profilers, nested runtimes) or act with the
// host's cloud identity (node agents): it keeps everything the OCI spec
// grants, denies no syscall and no egress destination.
// Only signal and ptrace isolation between zones remains, since a zone's
// members must not reach the tasks of other zones whatever they run.
// Admission audit, since it asks for almost nothing that could be unavailable.
func privilegedPreset() *Policy {
	return &Policy{Zone: ZoneSettings{Mode: ModeEnforce, Admission: AdmissionAudit}}
}
