package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// hostNamespaces are compared between a member's init and rauha itself
// (which runs in the host's namespaces): a member that shares one of them
// with the host is not isolated from it.
var hostNamespaces = []string{"pid", "mnt", "net", "ipc", "uts"}

// Verify builds the isolation report of a zone, or of one container when
// container is not empty.
func (e *Engine) Verify(zoneName, container string) (*zone.IsolationReport, error) {
	var (
		z        *zone.Zone
		members  []zone.Container
		peers    []uint32
		netPeers []uint32
	)
	err := e.store.View(func(tx *zone.Tx) error {
		if container != "" {
			rec, err := tx.Container(container)
			if err != nil {
				return fmt.Errorf("container %s: %w", container, err)
			}
			zoneName = rec.Zone
			members = []zone.Container{*rec}
		}
		var err error
		if z, err = tx.Zone(zoneName); err != nil {
			return fmt.Errorf("zone %s: %w", zoneName, err)
		}
		if container == "" {
			if members, err = tx.Members(zoneName); err != nil {
				return err
			}
		}
		// What the kernel policy should hold, read as a push reads it.
		peers, netPeers, err = zonePeers(tx, &z.Policy)
		return err
	})
	if errors.Is(err, zone.ErrNotFound) {
		return nil, fmt.Errorf("%w (see 'rauha zone list' and 'rauha list')", err)
	} else if err != nil {
		return nil, err
	}
	enf, err := e.enforcer()
	if err != nil {
		return nil, err
	}
	defer enf.Close()
	r := &zone.IsolationReport{Zone: z.Name, Container: container, Model: zone.ModelSyscallPolicy, Backend: enf.Backend()}
	r.Add("zone recorded", true, "zone %s (kernel id %d, policy %s, generation %d)", z.Name, z.ID, z.PolicySource, z.Generation)
	if z.Learning != nil {
		r.Add("learning", false, "zone %s learns: it denies nothing of what it records; 'rauha zone update %s --policy FILE' ends learning", z.Name, z.Name)
	}
	if un := enf.Unavailable(&z.Policy, nil); len(un) > 0 {
		r.Add("controls available", false, "not enforceable on this kernel with %s: %s", enf.Backend(), strings.Join(un, ", "))
	} else {
		r.Add("controls available", true, "every control of the policy is enforced by %s", enf.Backend())
	}
	// A stopped member has no process to confine: after a reboot its
	// recorded cgroup id names nothing, and reconcile rightly dropped it
	// from the kernel. Only live members must be registered.
	var live []zone.Container
	lsm := enf.Backend() == BackendLSM
	h := &hostMounts{}
	pidNS := &pidNSVerifier{e: e, lsm: lsm}
	for i := range members {
		if e.verifyMember(&members[i], z, lsm, h, pidNS, r) {
			live = append(live, members[i])
		}
	}
	enf.Verify(&ResolvedZone{Zone: z, Peers: peers, NetPeers: netPeers, Members: live}, r)
	zoneLimits(&z.Policy, lsm, r)
	r.Finish()
	return r, nil
}

// capBounding reads the bounding capability set of pid.
func capBounding(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapBnd in /proc/%d/status", pid)
}

// verifyMember checks what the engine itself guarantees for a member: its
// cgroup is the one recorded, its init does not share namespaces with the
// host, its configuration shows it no part of the enforcement, and gives it
// no way out of its cgroup in a hierarchy the backend does not guard. It reports whether the member has a process (is
// not stopped).
func (e *Engine) verifyMember(m *zone.Container, z *zone.Zone, guarded bool, h *hostMounts, pidNS *pidNSVerifier, r *zone.IsolationReport) bool {
	name := "container " + m.ID
	c, err := e.Load(m.ID)
	if err != nil {
		r.Add(name+": state", false, "%v", err)
		return true
	}
	st, err := c.State()
	if err != nil {
		r.Add(name+": state", false, "%v", err)
		return true
	}
	if st.Status == "stopped" {
		r.Add(name+": state", true, "stopped: no process to confine")
		return false
	}
	r.Add(name+": state", true, "%s, init pid %d", st.Status, st.Pid)
	dir := filepath.Join(bpf.UnifiedMountpoint(), m.CgroupPath)
	if fi, err := os.Stat(dir); err != nil {
		r.Add(name+": cgroup", false, "%v", err)
	} else if ino := inode(fi); ino != m.CgroupID {
		r.Add(name+": cgroup", false, "%s has id %d, the zone registered %d", dir, ino, m.CgroupID)
	} else {
		r.Add(name+": cgroup", true, "%s (id %d)", dir, ino)
	}
	var shared []string
	for _, ns := range hostNamespaces {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(st.Pid) + "/ns/" + ns)
		if err1 == nil && err2 == nil && mine == theirs {
			shared = append(shared, ns)
		}
	}
	if len(shared) > 0 {
		r.Add(name+": namespaces", false, "shares the host's %s namespace(s)", strings.Join(shared, ", "))
	} else {
		r.Add(name+": namespaces", true, "%s distinct from the host", strings.Join(hostNamespaces, ", "))
	}
	e.verifyResources(c, name, &z.Policy.Resources, r)
	if restrictsEgress(&z.Policy) {
		switch bnd, err := capBounding(st.Pid); {
		case err != nil:
			r.Add(name+": packet sockets", false, "read the init's capabilities: %v", err)
		case bnd&(1<<unix.CAP_NET_RAW) != 0:
			r.Add(name+": packet sockets", false, "the init holds CAP_NET_RAW (the policy's [capabilities] lists it): packet sockets send frames below IP that no egress program judges")
		default:
			r.Add(name+": packet sockets", true, "no CAP_NET_RAW in the init's bounding set")
		}
	}
	cfg := c.Config()
	memberLimits(&z.Policy, &cfg, guarded, r)
	verifyBPF(&cfg, &z.Policy, st.Pid, name, r)
	e.verifyNetwork(name, m, z, &cfg, st.Pid, r)
	pidNS.verify(z.Name, st.Pid, name, r)
	verifyExecRoutes(name, &cfg, &z.Policy, st.Pid, r)
	scan := scanBinds(&cfg, h)
	if routes, err := enforcementRoutes(scan, e.root); err != nil {
		r.Add(name+": enforcement reachable", false, "%v", err)
	} else if len(routes) > 0 {
		r.Add(name+": enforcement reachable", false, "%s", strings.Join(routes, "; "))
	} else {
		r.Add(name+": enforcement reachable", true, "no bind of a bpf filesystem or of the state root %s", e.root)
	}
	unguarded := unguardedHierarchies(guarded)
	if len(unguarded) == 0 {
		return true // bpf-lsm on cgroup2 alone: file_open denies the write itself (bpf/lsm.bpf.h)
	}
	if routes, err := cgroupEscapeRoutes(&cfg, &z.Policy, scan, unguarded); err != nil {
		r.Add(name+": cgroup escape", false, "%v", err)
	} else if len(routes) > 0 {
		r.Add(name+": cgroup escape", false, "%s", strings.Join(routes, "; "))
	} else {
		r.Add(name+": cgroup escape", true, "no writable cgroup mount, no capability that reaches a cgroup outside the member's")
	}
	verifyFileGuards(name, st.Pid, &cfg, &z.Policy, r)
	return true
}

// verifyResources checks that the limits in the member's cgroup files are
// within the zone's [resources]: update refuses to raise them, but a limit
// written to the cgroup by other means would not be seen anywhere else.
func (e *Engine) verifyResources(c *Container, name string, p *zone.Resources, r *zone.IsolationReport) {
	if *p == (zone.Resources{}) {
		r.Add(name+": resources", true, "the zone sets no [resources] limits")
		return
	}
	st, err := c.lc.State()
	if err != nil {
		r.Add(name+": resources", false, "read the cgroup paths: %v", err)
		return
	}
	over, read := cgroupLimitsAbove(st.CgroupPaths, p)
	if len(over) > 0 {
		r.Add(name+": resources", false, "above the zone's [resources]: %s", strings.Join(over, "; "))
	} else {
		r.Add(name+": resources", true, "within the zone's [resources]: %s", strings.Join(read, ", "))
	}
}

// verifyBPF checks that a member that may not call bpf(2) (keepsBPF) has
// the seccomp rule that denies it, and that its init runs under a filter.
func verifyBPF(cfg *configs.Config, p *zone.Policy, pid int, name string, r *zone.IsolationReport) {
	if keepsBPF(cfg, p) {
		r.Add(name+": bpf", true, "bpf(2) allowed: the member keeps CAP_BPF or CAP_SYS_ADMIN and the policy grants it")
		return
	}
	denied := cfg.Seccomp != nil && slices.ContainsFunc(cfg.Seccomp.Syscalls, func(sc *configs.Syscall) bool {
		return sc.Name == "bpf" && sc.Action == configs.Errno && sc.ErrnoRet != nil && *sc.ErrnoRet == uint(unix.EPERM)
	})
	if !denied {
		r.Add(name+": bpf", false, "no seccomp rule denies bpf(2) (created by a rauha without it: recreate the container)")
		return
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		r.Add(name+": bpf", false, "read the init's status: %v", err)
		return
	}
	if !strings.Contains(string(status), "\nSeccomp:\t2\n") {
		r.Add(name+": bpf", false, "the init (pid %d) runs without a seccomp filter", pid)
		return
	}
	r.Add(name+": bpf", true, "bpf(2) fails with EPERM (seccomp)")
}

// verifyPidNS checks that nobody the zone does not trust shares the member's
// pid namespace or one above it (pidns.go): under audit admission a member
// may have been started with such a sharer, and one may join later.
func (v *pidNSVerifier) verify(zoneName string, pid int, name string, r *zone.IsolationReport) {
	chain, err := pidNSChain("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil {
		r.Add(name+": pid namespace", false, "%v", err)
		return
	}
	if len(chain) == 0 {
		r.Add(name+": pid namespace", true, "the host's: see the namespaces check")
		return
	}
	if v.err == nil && v.idx == nil {
		if v.idx, v.err = scanPidNS(); v.err == nil {
			v.state, v.err = v.e.pidNSState()
		}
	}
	if v.err != nil {
		r.Add(name+": pid namespace", false, "%v", v.err)
		return
	}
	if conflicts := pidNSConflicts(zoneName, pidNSSharers(v.idx.tasks(chain), v.state.members), v.state.policies, v.lsm); len(conflicts) > 0 {
		r.Add(name+": pid namespace", false, "%s", strings.Join(conflicts, "; "))
		return
	}
	r.Add(name+": pid namespace", true, "shared with no task of another zone or of no zone")
}

// pidNSVerifier reads /proc and the store once for all members of a verify.
type pidNSVerifier struct {
	e     *Engine
	lsm   bool
	idx   pidNSIndex
	state *pidNSState
	err   error
}
