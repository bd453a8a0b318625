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
// break ordinary images (busybox, debian: package installs, servers, shells):
//   - capabilities: exactly what the container's spec asks for — clients
//     express --cap-add, --cap-drop and --privileged there, and a drop-in
//     runtime must honour them (a zone that wants fewer says so);
//   - filesystem, exec, devices, syscalls: no rules beyond the OCI spec;
//   - network egress unrestricted;
//   - signals and ptrace only within the zone — the one thing a zone always
//     adds over a plain container;
//   - enforce, but admission audit: a kernel that cannot enforce a control
//     still runs the workload and says which control is missing.
func standardPreset() *Policy {
	return &Policy{
		Zone: ZoneSettings{Mode: ModeEnforce, Admission: AdmissionAudit},
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
		Network: Network{AllowedEgress: List()},
	}
}

// privilegedPreset keeps everything the OCI spec grants; only signal and
// ptrace isolation between zones remains. Admission audit, since it asks for
// almost nothing that could be unavailable.
func privilegedPreset() *Policy {
	return &Policy{Zone: ZoneSettings{Mode: ModeEnforce, Admission: AdmissionAudit}}
}
