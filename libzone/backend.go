package libzone

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/capability"
	"github.com/sirupsen/logrus"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/internal/process"
	"github.com/rauha-runtime/rauha/landlock"
	"github.com/rauha-runtime/rauha/zone"
)

// Backend names, as reports and events show them.
const (
	BackendLSM      = "bpf-lsm"
	BackendLandlock = "landlock"
)

// kernelEnforcer is the Enforcer of both backends. The eBPF side (bpf/)
// holds zone membership, egress rules and the deny observer, and on the
// bpf-lsm backend the LSM hooks; filesystem and exec rules that the LSM
// programs do not cover, and all of them on the fallback, are a Landlock
// domain (landlock/) entered by every member process.
// It holds no store: the engine hands it what it needs (ResolvedZone).
type kernelEnforcer struct {
	backend
	k *bpf.Kernel
}

// backend is the part of the Enforcer that needs no open kernel state,
// only which backend the root enforces with: preparing a new member's
// configuration and process. create does that while the pinned maps open
// and the policy is pushed beside it (launch).
type backend struct {
	lsm bool
}

// enforcer opens the kernel side of this root: the pinned programs and maps,
// installing them when missing.
func (e *Engine) enforcer() (Enforcer, error) {
	lsm, err := e.kernelBackend()
	if err != nil {
		return nil, err
	}
	return e.openEnforcer(lsm)
}

// kernelBackend tells whether this root enforces with bpf-lsm: the backend
// its pin directory was installed with is kept; without pins a probe loads
// a real LSM program. It installs nothing, so create can take every
// admission decision before the kernel holds anything of the container.
func (e *Engine) kernelBackend() (lsm bool, err error) {
	if lsm, known := bpf.InstalledBackend(bpf.PinDirFor(e.root)); known {
		return lsm, nil
	}
	if lsm, err = bpf.Probe(); err != nil {
		return false, fmt.Errorf("probe for BPF-LSM support: %w", err)
	}
	return lsm, nil
}

// openEnforcer is enforcer with the backend kernelBackend found.
func (e *Engine) openEnforcer(lsm bool) (Enforcer, error) {
	dir := bpf.PinDirFor(e.root)
	_, known := bpf.InstalledBackend(dir)
	k, err := bpf.Open(dir, e.root, lsm)
	if errors.Is(err, bpf.ErrLayoutChanged) {
		// The pinned maps of another rauha cannot be carried over: install
		// afresh and restore every zone from the store. Until then the
		// members of this root are not enforced.
		logrus.Warnf("reinstall the kernel programs of %s: %v", e.root, err)
		if err = bpf.RemovePins(dir); err == nil {
			known = false
			k, err = bpf.Open(dir, e.root, lsm)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("zone enforcement: %w", err)
	}
	ke := &kernelEnforcer{backend: backend{lsm: k.LSM()}, k: k}
	if known && k.Upgraded() {
		// This rauha replaced another one's programs: the zones' kernel
		// policies are that rauha's encoding, and this one may read them
		// otherwise (a flag it sets, such as FileMounts). Push them
		// again; a zone that fails keeps the old one, which verify
		// reports, and reconcile pushes again.
		e.repushZones(ke)
	}
	if !known {
		// Fresh pins under an existing store mean the kernel lost its state
		// (a reboot, or someone removed the pins): restore every zone and
		// member before anything else happens. Reconcile pushes them the
		// way every command does (push.go): the engine reads each zone's
		// peers and members, the enforcer pushes.
		var zones []zone.Zone
		if err := e.store.View(func(tx *zone.Tx) (err error) { zones, err = tx.Zones(); return err }); err != nil {
			k.Close()
			return nil, err
		}
		if len(zones) > 0 {
			fixed, err := e.reconcile(ke)
			for _, f := range fixed {
				logrus.Infof("kernel state restored: %s", f)
			}
			if err != nil {
				k.Close()
				return nil, fmt.Errorf("restore zones after the kernel lost its state: %w", err)
			}
		}
	}
	return ke, nil
}

// repushZones pushes every zone's stored policy (applyStored) after an
// upgrade of the kernel programs, logging what fails.
func (e *Engine) repushZones(enf Enforcer) {
	var zones []zone.Zone
	if err := e.store.View(func(tx *zone.Tx) (err error) { zones, err = tx.Zones(); return err }); err != nil {
		logrus.Warnf("push the zones' policies to the upgraded kernel programs: %v (run 'rauha zone reconcile')", err)
		return
	}
	for i := range zones {
		if _, err := e.applyStored(enf, zones[i].Name); err != nil {
			logrus.Warnf("push the policy of zone %s to the upgraded kernel programs: %v (run 'rauha zone reconcile')", zones[i].Name, err)
		}
	}
}

// RestoreKernel restores the kernel state of a root that has zones but no
// pin directory (removed by hand, or lost while the state root stayed), so
// that any command run there, not only those that open the enforcer,
// brings enforcement back. While the pin directory exists it costs one stat
// and no BPF call.
func (e *Engine) RestoreKernel() error {
	if _, err := os.Stat(bpf.PinDirFor(e.root)); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if has, err := e.hasZones(); err != nil || !has {
		return err
	}
	enf, err := e.enforcer() // fresh pins: it restores every zone and member
	if err != nil {
		return err
	}
	return enf.Close()
}

func (b backend) Backend() string {
	if b.lsm {
		return BackendLSM
	}
	return BackendLandlock
}

func (ke *kernelEnforcer) Close() error { return ke.k.Close() }

func (b backend) Unavailable(p *zone.Policy, cfg *configs.Config) []string {
	return unavailableControls(p, cfg, b.lsm)
}

// unavailableControls is Unavailable of the backend lsm names; create's
// admission asks it before the enforcer is opened (kernelBackend).
func unavailableControls(p *zone.Policy, cfg *configs.Config, lsm bool) []string {
	var out []string
	p = landlockPart(p, lsm) // what is left to Landlock (filedeny.go)
	if hasPathRules(landlockRules(p, nil, lsm)) && p.Zone.Mode == zone.ModeAudit {
		// Landlock has no "log and allow": an audit zone's file rules would
		// either deny or not apply at all.
		out = append(out, "filesystem and exec rules in audit mode")
	}
	abi := landlock.ABI()
	if cfg != nil && landlockRules(p, cfg, lsm).ScopeSignals && abi < 6 {
		// Nothing else stands between zones that share a pid namespace on
		// the fallback (found on 6.1 in the VM lane: a zone killed another).
		out = append(out, fmt.Sprintf("signals: the container shares a pid namespace and Landlock ABI %d cannot scope signals (6 is needed)", abi))
	}
	switch {
	case abi == 0 && (p.Filesystem.WritablePaths != nil || len(p.Filesystem.ReadOnly) > 0 || len(p.Filesystem.Deny) > 0):
		out = append(out, "filesystem")
	case abi > 0 && abi < 3 && p.Filesystem.WritablePaths != nil:
		out = append(out, "filesystem.truncate")
	}
	if abi == 0 && (len(p.Exec.Allow) > 0 || len(p.Exec.Deny) > 0) {
		out = append(out, "exec")
	}
	// Landlock cannot take a right from one entry of a directory, so a
	// read-only or denied path below a writable one costs the writable
	// parent its right to create entries (see landlock's doc).
	if w := p.Filesystem.WritablePaths; w != nil {
		for _, q := range append(slices.Clone(p.Filesystem.ReadOnly), p.Filesystem.Deny...) {
			for _, parent := range *w {
				if strings.HasPrefix(q, strings.TrimSuffix(parent, "/")+"/") {
					out = append(out, fmt.Sprintf("filesystem: creating files in writable %s next to %s", parent, q))
				}
			}
		}
	}
	return out
}

// Claim withdraws the signal and ptrace grants other zones' entries still
// give the new zone's id (see Enforcer.Claim).
func (ke *kernelEnforcer) Claim(z *zone.Zone) error {
	if err := ke.k.WithdrawGrants(z.ID); err != nil {
		return fmt.Errorf("zone %s: %w", z.Name, err)
	}
	return nil
}

// Apply pushes the policy to the maps. Running members see it on their next
// connect or send, and on bpf-lsm on their next open or exec for the deny
// lists (filedeny.go); Landlock domains of running processes cannot change,
// so the other filesystem and exec rule changes reach new processes only.
func (ke *kernelEnforcer) Apply(z *ResolvedZone) (DenyPaths, error) {
	p, err := ke.kernelPolicy(z)
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", z.Name, err)
	}
	paths, err := ke.setPolicy(z, p) // with the deny inodes on bpf-lsm (filedeny.go)
	if err != nil {
		return nil, err
	}
	return paths, ke.learnMembers(z.Zone, z.Members)
}

// learnKernelPolicy is the kernel policy of a learning zone: nothing denied
// (signals and ptrace into other zones stay denied by the targets' own
// policies), the base policy's denied syscalls recorded.
func (ke *kernelEnforcer) learnKernelPolicy(z *zone.Zone) bpf.ZonePolicy {
	kp := bpf.ZonePolicy{Mode: bpf.ModeLearn}
	if z.Learning != nil {
		for _, name := range z.Learning.Syscalls.Deny {
			if nr, ok := syscallNumber(name); ok && nr < bpf.LearnSyscallMax {
				kp.LearnSyscalls = append(kp.LearnSyscalls, nr)
			}
		}
	}
	return kp
}

// kernelPolicy translates z's policy into what the eBPF programs check.
func (ke *kernelEnforcer) kernelPolicy(z *ResolvedZone) (bpf.ZonePolicy, error) {
	p := &z.Policy
	if p.Zone.Mode == zone.ModeLearn {
		return ke.learnKernelPolicy(z.Zone), nil
	}
	kp := bpf.ZonePolicy{DenyCrossZoneSignal: true, DenyCrossZonePtrace: true}
	if p.Zone.Mode == zone.ModeAudit {
		kp.Mode = bpf.ModeAudit
	}
	if p.Network.AllowedEgress != nil {
		kp.EgressRestricted = true
		for _, s := range *p.Network.AllowedEgress {
			eg, err := zone.ParseEgress(s)
			if err != nil {
				return kp, err
			}
			kp.Egress = append(kp.Egress, bpf.EgressRule{Prefix: eg.Prefix, Port: eg.Port})
		}
	}
	for _, s := range p.Network.DeniedEgress {
		eg, err := zone.ParseEgress(s)
		if err != nil {
			return kp, err
		}
		kp.EgressDeny = append(kp.EgressDeny, bpf.EgressRule{Prefix: eg.Prefix, Port: eg.Port})
	}
	if p.Capabilities.Allowed != nil && ke.lsm {
		kp.CapDeny = capDenyMask(*p.Capabilities.Allowed)
	}
	kp.SignalFrom = slices.Clone(z.Peers)
	kp.PtraceFrom = slices.Clone(z.Peers)
	if p.Network.AllowedZones != nil {
		kp.ZonesRestricted = true
		kp.NetPeers = slices.Clone(z.NetPeers)
	}
	// The fallback's mounts for deny and read_only paths (fileguard.go)
	// deny some changes with EXDEV, EBUSY or ENOENT: the observer reports
	// those for this zone, and the engine keeps the ones on its paths.
	kp.FileMounts = !ke.lsm && len(p.Filesystem.Deny)+len(p.Filesystem.ReadOnly) > 0
	return kp, nil
}

func (b backend) PrepareConfig(z *zone.Zone, cfg *configs.Config) error {
	if !b.lsm {
		// Mounts and seccomp hold what Landlock has no right for
		// (fileguard.go).
		if err := guardFiles(&z.Policy, cfg); err != nil {
			return fmt.Errorf("zone %s: %w", z.Name, err)
		}
	}
	if cfg.Seccomp != nil {
		// The Landlock shim must be able to enter its domain under the
		// container's own seccomp profile.
		landlock.AllowInSeccomp(cfg.Seccomp)
	}
	return nil
}

// GuardRunning makes the fallback's file rule mounts in running members
// (fileguardupdate.go; on bpf-lsm the deny and read_only lists are inode
// lists the hooks judge for every process at once), then, on both
// backends, closes their code routes when the zone has exec rules
// (execupdate.go).
func (ke *kernelEnforcer) GuardRunning(p, old *zone.Policy, members []RunningMember) (map[string][]string, error) {
	lsm := ke.lsm
	var errs []error
	links := map[string][]string{}
	for _, m := range members {
		var l []string
		var err error
		if !lsm {
			l, err = guardRunning(m, old, p)
		}
		err = errors.Join(err, closeRunningExec(m, old, p, lsm))
		if err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", m.ID, err))
		}
		if l != nil {
			links[m.ID] = l
		}
	}
	return links, errors.Join(errs...)
}

// PrepareProcess wraps p in the Landlock shim when the zone has filesystem,
// exec or scoping rules (an init on bpf-lsm whose zone has only deny lists:
// in the shim without a domain, prepareExecReport), and for the init of a
// zone with exec rules raises vm.memfd_noexec in its new pid namespace
// (execroutes.go).
func (b backend) PrepareProcess(z *zone.Zone, cfg *configs.Config, p *libcontainer.Process, initPid int, execStatus *os.File) (started func(pid int) error, release func(), err error) {
	started, release, err = b.prepareLandlock(z, cfg, p, initPid, execStatus)
	if err != nil || initPid != 0 || !hasExecRules(&z.Policy) || !memfdBySysctl(cfg) {
		return started, release, err
	}
	// The init's pid namespace is new: memfds are made non-executable in it
	// before user code runs, for the init and everything exec'd later.
	landlockStarted := started
	started = func(pid int) error {
		if landlockStarted != nil {
			if err := landlockStarted(pid); err != nil {
				return err
			}
		}
		return wrapExecErr(z, forbidMemfdExec(pid))
	}
	return started, release, nil
}

func wrapExecErr(z *zone.Zone, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("zone %s: %w", z.Name, err)
}

// prepareLandlock wraps p in the Landlock shim. For an init (initPid 0) the
// ruleset is filled in by started, once the init has mounted everything
// (Landlock ignores rules on a directory that is later mounted over); an
// exec'd process gets its rules from the running container's root before
// it starts.
func (b backend) prepareLandlock(z *zone.Zone, cfg *configs.Config, p *libcontainer.Process, initPid int, execStatus *os.File) (started func(pid int) error, release func(), err error) {
	rules := b.landlockRulesFor(&z.Policy, cfg)
	noop := func() {}
	if initPid == 0 && !rules.RestrictsExec() && !b.denyListsJudgeExec(&z.Policy) {
		// When neither the domain nor the bpf-lsm deny lists can refuse
		// the init's execve there is nothing to report: start returns at
		// the exec fifo, as runc's does, instead of waiting for the exec
		// (create found the command already).
		execStatus = nil
	}
	if initPid != 0 {
		root := procRoot(initPid)
		if err := process.LookPathIn(root, p); err != nil {
			return nil, noop, err
		}
		rs, _, err := landlock.BuildRuleset(root, rules)
		if err != nil || rs == nil {
			return nil, noop, wrapLandlockErr(z, err)
		}
		cleanup, err := landlock.Wrap(p, rs, execStatus)
		if err != nil {
			rs.Close()
			return nil, noop, wrapLandlockErr(z, err)
		}
		return nil, func() { cleanup(); rs.Close() }, nil
	}
	rs, _, err := landlock.CreateRuleset(rules)
	if err != nil {
		return nil, noop, wrapLandlockErr(z, err)
	}
	if rs == nil {
		return b.prepareExecReport(z, p, execStatus)
	}
	args := p.Args
	cleanup, err := landlock.Wrap(p, rs, execStatus)
	if err != nil {
		rs.Close()
		return nil, noop, wrapLandlockErr(z, err)
	}
	started = func(pid int) error {
		root := procRoot(pid)
		if err := process.LookPathIn(root, &libcontainer.Process{Args: args, Env: p.Env, Cwd: p.Cwd}); err != nil {
			return err
		}
		if _, err := landlock.Populate(rs, root, rules); err != nil {
			return wrapLandlockErr(z, err)
		}
		return nil
	}
	return started, func() { cleanup(); rs.Close() }, nil
}

// prepareExecReport starts a bpf-lsm init without a Landlock domain through
// the exec shim when the zone has deny lists: lsm/bprm_check_security (or
// lsm/file_open, for a filesystem.deny path) refuses a denied entrypoint in
// the init's execve, after the exec fifo has let "start" return, and
// libcontainer's init would exit with nobody to tell. The shim reports the
// error to start and run as the Landlock one does, and a missing command
// is still reported at create (lookPathIn), as runc does. A zone that gets
// its first deny list between create and start is not covered.
func (b backend) prepareExecReport(z *zone.Zone, p *libcontainer.Process, execStatus *os.File) (started func(pid int) error, release func(), err error) {
	noop := func() {}
	if execStatus == nil || !b.denyListsJudgeExec(&z.Policy) {
		return nil, noop, nil
	}
	orig := &libcontainer.Process{Args: p.Args, Env: p.Env, Cwd: p.Cwd}
	cleanup, err := landlock.ReportExec(p, execStatus)
	if err != nil {
		return nil, noop, fmt.Errorf("zone %s: %w", z.Name, err)
	}
	started = func(pid int) error { return process.LookPathIn(procRoot(pid), orig) }
	return started, cleanup, nil
}

// denyListsJudgeExec reports whether the bpf-lsm deny lists, which are not
// part of the Landlock domain there, can refuse an execve of p's zone.
func (b backend) denyListsJudgeExec(p *zone.Policy) bool {
	return b.lsm && len(p.Filesystem.Deny)+len(p.Exec.Deny) > 0
}

func wrapLandlockErr(z *zone.Zone, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("zone %s: landlock: %w", z.Name, err)
}

func procRoot(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/root" }

// landlockRules are the Landlock rules of a policy for one container. cfg
// may be nil (admission only looks at which rules exist). Signal and
// abstract-socket scoping is only asked for where a namespace is shared:
// a private pid or network namespace already isolates them, and a scoped
// init could not be signalled by the container's own exec'd processes.
// With lsm (the bpf-lsm backend) signals are never scoped: lsm/task_kill
// and lsm/ptrace_access_check judge by zone, so a zone's containers can
// signal each other, and a Landlock scope would deny first (it runs before
// the BPF LSM) and leave no event.
// Known limit: in a zone with filesystem or exec rules, an exec'd process
// is in a sibling domain of the init and cannot read the init's ptrace-
// guarded /proc files (/proc/1/environ, /proc/1/ns/*).
func landlockRules(p *zone.Policy, cfg *configs.Config, lsm bool) landlock.Rules {
	r := landlock.Rules{
		ReadOnly:  p.Filesystem.ReadOnly,
		Deny:      p.Filesystem.Deny,
		ExecAllow: p.Exec.Allow,
		ExecDeny:  p.Exec.Deny,
	}
	if w := p.Filesystem.WritablePaths; w != nil {
		r.Writable = *w
		if len(r.Writable) == 0 {
			// An empty list means "nothing writable"; for Landlock an empty
			// list means "no write rules", so name a path that matches none.
			r.Writable = []string{nothingPath}
		}
	}
	// Scoping rides on a domain the policy needs anyway. Alone it would put
	// a host-network container's exec'd processes in sibling domains of its
	// init, and Landlock forbids ptrace-mode access across domains: "exec c
	// ps" or reading /proc/1/ns would fail in zones that ask for nothing.
	// Signals are different: sharing a pid namespace with the host or
	// another zone leaves nothing else between the zones, so a shared pid
	// namespace always gets a scoped domain.
	if cfg != nil {
		if links := deniedLinks(cfg); len(links) > 0 && !lsm {
			// Other names of denied inodes (fileguard.go): a rule granted
			// to one of them would grant the inode under every name.
			r.Deny = append(slices.Clone(r.Deny), links...)
		}
		// A learning zone records signals across zones instead.
		r.ScopeSignals = !lsm && !privateNamespace(cfg, configs.NEWPID) && p.Zone.Mode != zone.ModeLearn
		r.ScopeAbstractUnix = hasPathRules(r) && !privateNamespace(cfg, configs.NEWNET)
	}
	return r
}

// hasPathRules reports whether r restricts any path (needs a domain anyway).
func hasPathRules(r landlock.Rules) bool {
	return r.Writable != nil || len(r.ReadOnly)+len(r.Deny)+len(r.ExecAllow)+len(r.ExecDeny) > 0
}

func privateNamespace(cfg *configs.Config, t configs.NamespaceType) bool {
	return cfg.Namespaces.Contains(t) && cfg.Namespaces.PathOf(t) == ""
}

func (ke *kernelEnforcer) Join(z *zone.Zone, c *zone.Container, netns string) error {
	dir := filepath.Join(bpf.UnifiedMountpoint(), c.CgroupPath)
	cgid, err := ke.k.AddMember(z.ID, dir)
	if err != nil {
		return fmt.Errorf("zone %s: register container %s: %w", z.Name, c.ID, err)
	}
	c.CgroupID = cgid
	if netns != "" {
		if err := ke.k.SetMemberNetns(cgid, netns); err != nil {
			return fmt.Errorf("zone %s: container %s: %w", z.Name, c.ID, err)
		}
	}
	addrs, err := parseAddrs(c.Addresses)
	if err == nil {
		err = ke.k.SetMemberAddrs(z.ID, cgid, addrs)
	}
	if err != nil {
		return fmt.Errorf("zone %s: container %s: %w", z.Name, c.ID, err)
	}
	return ke.learnMember(z, c)
}

func (ke *kernelEnforcer) Leave(z *zone.Zone, c *zone.Container) error {
	dir := filepath.Join(bpf.UnifiedMountpoint(), c.CgroupPath)
	if err := ke.k.RemoveMember(dir, c.CgroupID); err != nil {
		return fmt.Errorf("zone %s: remove container %s: %w", z.Name, c.ID, err)
	}
	return nil
}

func (ke *kernelEnforcer) Remove(z *zone.Zone) error {
	if err := ke.k.DeletePolicy(z.ID); err != nil {
		return fmt.Errorf("remove zone %s from the kernel: %w", z.Name, err)
	}
	return nil
}

func (ke *kernelEnforcer) Verify(z *ResolvedZone, r *zone.IsolationReport) {
	members := z.Members
	attached, err := ke.k.Attached()
	if err != nil {
		r.Add("hooks attached", false, "%v", err)
	} else {
		r.Add("hooks attached", len(attached) > 0, "%d programs: %v", len(attached), attached)
	}
	var kernel *bpf.ZonePolicy
	got, gotErr := ke.k.PolicyOf(z.ID)
	if gotErr == nil {
		kernel = &got
	}
	want, err := ke.kernelPolicy(z)
	var mounts []nestedMount
	if err == nil {
		mounts, err = ke.verifyFileDenies(&z.Policy, members, kernel, &want)
	}
	if err != nil {
		r.Add("kernel policy", false, "%v", err)
	} else if gotErr != nil {
		r.Add("kernel policy", false, "read zone %d from the kernel: %v", z.ID, gotErr)
	} else if !got.Equal(want) {
		r.Add("kernel policy", false, "the kernel's policy differs from the stored one (generation %d): %s: run 'rauha zone reconcile'", z.Generation, got.Diff(want))
	} else {
		r.Add("kernel policy", true, "kernel maps equal the stored policy (generation %d)", z.Generation)
	}
	ke.verifyFileRoutes(&z.Policy, attached, kernel, &want, mounts, r)
	regs, err := ke.k.Members()
	if err != nil {
		r.Add("members registered", false, "%v", err)
	}
	for _, m := range members {
		if regs == nil {
			break
		}
		name := "container " + m.ID + ": member"
		if zid, ok := regs[m.CgroupID]; !ok {
			r.Add(name, false, "cgroup id %d is not registered with the kernel", m.CgroupID)
		} else if zid != z.ID {
			r.Add(name, false, "cgroup id %d is registered in zone id %d, not %d", m.CgroupID, zid, z.ID)
		} else {
			r.Add(name, true, "cgroup id %d registered in zone id %d", m.CgroupID, zid)
		}
	}
	for _, m := range members {
		name := "container " + m.ID + ": packet egress"
		want := "cgroup_skb/egress cgroup=" + strconv.FormatUint(m.CgroupID, 10)
		switch {
		case attached == nil:
			r.Add(name, false, "attached programs unknown: %v", err)
		case slices.Contains(attached, want):
			r.Add(name, true, "cgroup_skb/egress judges every packet of cgroup %d", m.CgroupID)
		default:
			r.Add(name, false, "cgroup_skb/egress is not attached to cgroup %d: raw and ICMP sockets reach any host; run 'rauha zone reconcile'", m.CgroupID)
		}
		if z.Policy.Network.AllowedZones == nil {
			continue
		}
		name = "container " + m.ID + ": packet ingress"
		want = "cgroup_skb/ingress cgroup=" + strconv.FormatUint(m.CgroupID, 10)
		switch {
		case attached == nil:
			r.Add(name, false, "attached programs unknown: %v", err)
		case slices.Contains(attached, want):
			r.Add(name, true, "cgroup_skb/ingress judges every packet delivered to cgroup %d by the zone of its sender", m.CgroupID)
		default:
			r.Add(name, false, "cgroup_skb/ingress is not attached to cgroup %d: other zones' members reach it whatever network.allowed_zones says; run 'rauha zone reconcile'", m.CgroupID)
		}
	}
	ke.verifyAddrs(z.Zone, members, r)
	if c, err := ke.k.Counters(z.ID); err != nil {
		r.Add("events", false, "read counters: %v", err)
	} else {
		r.Add("events", c.Dropped == 0, "%d events dropped because the ring buffer was full", c.Dropped)
	}
}

// verifyAddrs checks that every address in each running member's network
// namespace is registered as the zone's: an address added after create is
// not until reconcile, and the member's packets from it to other zones'
// members are dropped meanwhile.
func (ke *kernelEnforcer) verifyAddrs(z *zone.Zone, members []zone.Container, r *zone.IsolationReport) {
	regs, err := ke.k.MemberAddrs()
	if err != nil {
		r.Add("addresses registered", false, "%v", err)
		return
	}
	owners, err := ke.k.AddrZones()
	if err != nil {
		r.Add("addresses registered", false, "%v", err)
		return
	}
	for _, m := range members {
		name := "container " + m.ID + ": addresses"
		live, err := liveAddrs(m.Pid)
		if err != nil {
			r.Add(name, false, "%v", err)
			continue
		}
		if live == nil {
			continue // stopped, or in the host's network namespace: no addresses of its own
		}
		var bad []string
		for _, a := range live {
			switch owner, ok := owners[a]; {
			case !slices.Contains(regs[m.CgroupID], a):
				bad = append(bad, fmt.Sprintf("%v is not registered (added after create: its packets to other zones' members are dropped until 'rauha zone reconcile')", a))
			case !ok:
				bad = append(bad, fmt.Sprintf("%v is registered for the member but in no zone: run 'rauha zone reconcile'", a))
			case owner != z.ID:
				bad = append(bad, fmt.Sprintf("%v belongs to zone id %d (a member of that zone holds it too)", a, owner))
			}
		}
		if len(bad) > 0 {
			r.Add(name, false, "%s", strings.Join(bad, "; "))
		} else {
			r.Add(name, true, "registered in zone id %d: %v", z.ID, live)
		}
	}
}

// liveAddrs reads the addresses of the network namespace of pid; nil when
// the process is gone or shares rauha's (the host's) network namespace.
func liveAddrs(pid int) ([]netip.Addr, error) {
	if pid <= 0 {
		return nil, nil
	}
	theirs, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("network namespace of pid %d: %w", pid, err)
	}
	mine, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("network namespace of rauha: %w", err)
	}
	if os.SameFile(theirs, mine) {
		return nil, nil
	}
	addrs, err := netnsAddrs(pid)
	if err != nil {
		return nil, err
	}
	return append([]netip.Addr{}, addrs...), nil
}

// capDenyMask is the bit set of every capability not in allowed.
func capDenyMask(allowed []string) uint64 {
	keep := map[string]bool{}
	for _, n := range allowed {
		if c, err := zone.CapabilityName(n); err == nil {
			keep[c] = true
		}
	}
	var mask uint64
	for _, c := range capability.ListKnown() {
		if !keep["CAP_"+strings.ToUpper(c.String())] && c < 64 {
			mask |= 1 << uint(c)
		}
	}
	return mask
}

// capabilityName names capability number n ("CAP_SYS_ADMIN").
func capabilityName(n uint64) string {
	for _, c := range capability.ListKnown() {
		if uint64(c) == n {
			return "CAP_" + strings.ToUpper(c.String())
		}
	}
	return "capability " + strconv.FormatUint(n, 10)
}

// Prune removes kernel entries no record owns: member cgroups not in live
// (cgroup id → zone id), member pins without a registration, and zone
// policies not in zones.
func (ke *kernelEnforcer) Prune(live map[uint64]uint32, zones map[uint32]bool) ([]string, error) {
	var fixed []string
	var errs []error
	members, err := ke.k.Members()
	if err != nil {
		return nil, err
	}
	for cgid, zid := range members {
		if want, ok := live[cgid]; ok && want == zid {
			continue
		}
		if _, ok := live[cgid]; ok {
			continue // re-joined under another zone id: Join reported it
		}
		if err := ke.k.RemoveMember("", cgid); err != nil {
			errs = append(errs, err)
			continue
		}
		fixed = append(fixed, fmt.Sprintf("removed cgroup %d from zone id %d: no container owns it", cgid, zid))
	}
	orphans, err := ke.k.PruneMemberPins(func(cgid uint64) bool { _, ok := live[cgid]; return ok })
	if err != nil {
		errs = append(errs, err)
	}
	for _, cgid := range orphans {
		fixed = append(fixed, fmt.Sprintf("removed the member pins of cgroup %d: registered in no zone, what a killed create or delete leaves", cgid))
	}
	dropped, err := ke.k.PruneAddrs()
	if err != nil {
		errs = append(errs, err)
	}
	for _, a := range dropped {
		fixed = append(fixed, fmt.Sprintf("removed address %v: no member holds it", a))
	}
	ids, err := ke.k.PolicyZones()
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range ids {
		if zones[id] {
			continue
		}
		if err := ke.k.DeletePolicy(id); err != nil {
			errs = append(errs, err)
			continue
		}
		fixed = append(fixed, fmt.Sprintf("removed the policy of zone id %d: no zone has that id", id))
	}
	return fixed, errors.Join(errs...)
}

// Check is bpf.Kernel.CheckPrograms: pinned programs bound to other maps.
func (ke *kernelEnforcer) Check() error { return ke.k.CheckPrograms() }

// Uninstall detaches and unpins every program and map of this root.
func (ke *kernelEnforcer) Uninstall() error { return ke.k.Remove() }
