package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
		z       *zone.Zone
		members []zone.Container
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
			members, err = tx.Members(zoneName)
		}
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
	if un := enf.Unavailable(&z.Policy, nil); len(un) > 0 {
		r.Add("controls available", false, "not enforceable on this kernel with %s: %s", enf.Backend(), strings.Join(un, ", "))
	} else {
		r.Add("controls available", true, "every control of the policy is enforced by %s", enf.Backend())
	}
	// A stopped member has no process to confine: after a reboot its
	// recorded cgroup id names nothing, and reconcile rightly dropped it
	// from the kernel. Only live members must be registered.
	var live []zone.Container
	for i := range members {
		if e.verifyMember(&members[i], z, enf.Backend() == BackendLSM, r) {
			live = append(live, members[i])
		}
	}
	enf.Verify(z, live, r)
	r.Finish()
	return r, nil
}

// verifyMember checks what the engine itself guarantees for a member: its
// cgroup is the one recorded, its init does not share namespaces with the
// host, and, without the bpf-lsm cgroup guard, its configuration gives it no
// way out of its cgroup. It reports whether the member has a process (is
// not stopped).
func (e *Engine) verifyMember(m *zone.Container, z *zone.Zone, guarded bool, r *zone.IsolationReport) bool {
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
	if guarded {
		return true // bpf-lsm: file_open denies the write itself (bpf/lsm.bpf.h)
	}
	cfg := c.Config()
	if routes := cgroupEscapeRoutes(&cfg, &z.Policy); len(routes) > 0 {
		r.Add(name+": cgroup escape", false, "%s", strings.Join(routes, "; "))
	} else {
		r.Add(name+": cgroup escape", true, "no writable cgroup mount, no CAP_SYS_ADMIN outside a cgroup namespace")
	}
	verifyFileGuards(name, st.Pid, &cfg, &z.Policy, r)
	return true
}
