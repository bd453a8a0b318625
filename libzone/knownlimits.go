package libzone

import (
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/rauha-runtime/rauha/zone"
)

// The known limits verify names (docs/design.md, "Known limits"): what the
// kernel gives a backend no way to do. Each applies only to zones whose
// policy asks for the control it limits, so a report lists what matters to
// that zone and nothing else.
const (
	limitExecInMemory    = "exec: code an allowed program makes in memory (JITs, anonymous executable memory, /proc/self/mem) is not judged, and an interpreter reading a script (sh /tmp/x.sh) is allowed"
	limitUpdateDomain    = "zone update: a running process's Landlock domain cannot change, so new file and exec rules reach running containers as mounts: deny, read_only and writable_paths rules, exec.deny files (the null device) and, with exec rules, every writable mount made noexec (a file opened, or a directory entered, before the update stays reachable through that descriptor)"
	limitUpdateAllow     = "zone update: writable_paths and read_only are a Landlock domain that cannot change in a running process: new ones reach processes started afterwards only (the deny lists change at once)"
	limitUpdateExecAllow = "zone update: exec.allow is a Landlock domain that cannot change in a running process: a process running when an update adds or narrows the list can still execute the image's binaries outside it until its container is recreated (written, copied and memfd code is refused it: the update makes its writable mounts noexec and raises vm.memfd_noexec to 2; a memfd it made before keeps its seal)"
	limitUpdateAtStart   = "zone update: capabilities and syscalls.deny are set in each process when it starts (the kernel cannot loosen a running seccomp filter or give capabilities back): new ones reach containers created afterwards"
	limitSignalGrant     = "signals.allowed_zones: a Landlock-scoped domain cannot signal outside itself, so the list grants nothing on this backend"
	limitSigioEvent      = "signals: a SIGIO or SIGURG that Landlock's signal scoping refuses leaves no event: the kernel drops it before any signal is generated and no syscall fails"
)

// zoneLimits adds the known limits of policy p on the backend (lsm or the
// Landlock fallback) to r.
func zoneLimits(p *zone.Policy, lsm bool, r *zone.IsolationReport) {
	if len(p.Exec.Allow) > 0 || len(p.Exec.Deny) > 0 {
		r.Limit(limitExecInMemory)
	}
	switch {
	case lsm && (p.Filesystem.WritablePaths != nil || len(p.Filesystem.ReadOnly) > 0):
		r.Limit(limitUpdateAllow)
	case !lsm && hasPathRules(landlockRules(p, nil, false)):
		r.Limit(limitUpdateDomain)
	}
	if len(p.Exec.Allow) > 0 {
		r.Limit(limitUpdateExecAllow)
	}
	// On bpf-lsm the capable hook reads the zone's current list.
	if len(p.Syscalls.Deny) > 0 || !lsm && p.Capabilities.Allowed != nil {
		r.Limit(limitUpdateAtStart)
	}
	if !lsm && len(p.Signals.AllowedZones) > 0 {
		r.Limit(limitSignalGrant)
	}
}

// memberLimits adds the known limits that depend on a member's
// configuration: only a member that shares a pid namespace gets a
// signal-scoped Landlock domain on the fallback.
func memberLimits(p *zone.Policy, cfg *configs.Config, lsm bool, r *zone.IsolationReport) {
	if !lsm && landlockRules(p, cfg, false).ScopeSignals {
		r.Limit(limitSigioEvent)
	}
}
