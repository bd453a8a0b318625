package libzone

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// A task sees, signals and traces every task of its own pid namespace and of
// the namespaces below it. A container that joins a pid namespace by path
// therefore puts its tasks in reach of whoever is in that namespace or in a
// namespace above it (short of the host's, which reaches every task anyway
// and is rauha's own concern: verify's namespaces check, Landlock scoping).
//
// Who is there is decided by the tasks' cgroups: a task in a member's cgroup
// (or below it) is of that member's zone, any other task is of no zone.
//   - A task of no zone is judged by nothing, on either backend (both allow
//     by default outside zones): a pid namespace it shares is a route.
//   - A task of another zone is judged by the target's zone on bpf-lsm
//     (lsm/task_kill, lsm/ptrace_access_check, which also guards /proc/PID/
//     root and environ). On the fallback only the joining member's side is
//     Landlock-scoped: the other zone's tasks reach it, so the two zones
//     must allow each other in [signals] allowed_zones.

// pidNSTask is a task found in a pid namespace of interest.
type pidNSTask struct {
	pid    int
	cgroup string // its cgroup v2 path ("/a/b"), "" when unknown
}

// pidNSChain lists the inode of the pid namespace at path and of each
// namespace above it, stopping before the caller's own (the host's): the
// namespaces whose tasks reach a task that joins path.
func pidNSChain(path string) ([]uint64, error) {
	host, err := nsInode("/proc/self/ns/pid")
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open pid namespace %s: %w", path, err)
	}
	var chain []uint64
	for {
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("pid namespace %s: %w", path, err)
		}
		if st.Ino == host {
			break
		}
		chain = append(chain, st.Ino)
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			// Above the caller's namespace: the host's, or a namespace the
			// caller does not see (nothing of it reaches the caller either).
			return chain, nil
		} else if err != nil {
			return nil, fmt.Errorf("parent of pid namespace %s: %w", path, err)
		}
		fd = parent
	}
	unix.Close(fd)
	return chain, nil
}

func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("pid namespace %s: %w", path, err)
	}
	return st.Ino, nil
}

// pidNSIndex maps each pid namespace (inode) to the processes in it.
type pidNSIndex map[uint64][]int

// scanPidNS reads the pid namespace of every process from /proc. It only
// runs for containers that share a pid namespace, and once per verify.
func scanPidNS() (pidNSIndex, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	idx := pidNSIndex{}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if ino, err := nsInode("/proc/" + n + "/ns/pid"); err == nil {
			idx[ino] = append(idx[ino], pid)
		} // else: gone since the listing
	}
	return idx, nil
}

// tasks are the processes in the namespaces of chain, with their cgroups.
func (idx pidNSIndex) tasks(chain []uint64) []pidNSTask {
	var out []pidNSTask
	for _, ino := range chain {
		for _, pid := range idx[ino] {
			if !exited(pid) {
				out = append(out, pidNSTask{pid: pid, cgroup: unifiedCgroupOf(pid)})
			}
		}
	}
	return out
}

// exited reports a zombie (or a task already gone): it signals nobody, and
// its cgroup may no longer be its container's. An init that does not reap
// (sleep as pid 1) keeps the zombies of a container that left its namespace.
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// unifiedCgroupOf is the cgroup v2 path of pid ("0::/path"), "" if unknown.
func unifiedCgroupOf(pid int) string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p, ok := strings.CutPrefix(s.Text(), "0::"); ok {
			return p
		}
	}
	return ""
}

// zoneOfCgroup names the zone of the member whose cgroup holds cgroup path
// p (itself or a nested cgroup; the nearest registered ancestor wins), and
// whether there is one.
func zoneOfCgroup(p string, members []zone.Container) (string, bool) {
	best, zoneName := "", ""
	for _, m := range members {
		c := m.CgroupPath
		if c == "" || c == "/" {
			continue
		}
		if within(p, c) && len(c) > len(best) {
			best, zoneName = c, m.Zone
		}
	}
	return zoneName, best != ""
}

// pidNSSharers groups tasks by zone (zone "" for tasks of no zone) and keeps
// one pid of each as an example.
func pidNSSharers(tasks []pidNSTask, members []zone.Container) map[string]int {
	out := map[string]int{}
	for _, t := range tasks {
		z, _ := zoneOfCgroup(t.cgroup, members)
		if _, ok := out[z]; !ok {
			out[z] = t.pid
		}
	}
	return out
}

// pidNSConflicts judges who shares a pid namespace with a member of zone
// self (see the top of this file): sharers by zone, policies the stored
// policy of each zone, lsm whether the bpf-lsm backend judges signals and
// ptrace by zone.
func pidNSConflicts(self string, sharers map[string]int, policies map[string]*zone.Policy, lsm bool) []string {
	var out []string
	for _, other := range slices.Sorted(maps.Keys(sharers)) {
		pid := sharers[other]
		switch {
		case other == "":
			out = append(out, fmt.Sprintf("signals: the pid namespace is shared with tasks of no zone (pid %d), which nothing stops from signalling or tracing the container (give it a pid namespace of its own)", pid))
		case other == self || lsm:
		case !allowsZone(policies[self], other) || !allowsZone(policies[other], self):
			out = append(out, fmt.Sprintf("signals: the pid namespace is shared with zone %s (pid %d), whose tasks Landlock cannot keep from signalling or tracing zone %s (give the container a pid namespace of its own, or let zones %s and %s allow each other in [signals] allowed_zones)",
				other, pid, self, self, other))
		}
	}
	return out
}

func allowsZone(p *zone.Policy, name string) bool {
	return p != nil && slices.Contains(p.Signals.AllowedZones, name)
}

// pidNSState is what judging a shared pid namespace needs from the store:
// the members of every zone and every zone's policy.
type pidNSState struct {
	members  []zone.Container
	policies map[string]*zone.Policy
}

// pidNSState reads the pidNSState of the store.
func (e *Engine) pidNSState() (s *pidNSState, err error) {
	err = e.store.View(func(tx *zone.Tx) error {
		s, err = pidNSStateIn(tx)
		return err
	})
	return s, err
}

// pidNSStateIn is pidNSState read in tx.
func pidNSStateIn(tx *zone.Tx) (*pidNSState, error) {
	s := &pidNSState{policies: map[string]*zone.Policy{}}
	zones, err := tx.Zones()
	if err != nil {
		return nil, err
	}
	for i := range zones {
		s.policies[zones[i].Name] = &zones[i].Policy
	}
	if s.members, err = tx.Containers(); err != nil {
		return nil, err
	}
	return s, nil
}

// sharedPidNSConflicts is admission's view of a container of zone z whose
// config joins a pid namespace by path; none for a private or the host's
// pid namespace.
func (e *Engine) sharedPidNSConflicts(tx *zone.Tx, z *zone.Zone, cfg *configs.Config, lsm bool) ([]string, error) {
	path := cfg.Namespaces.PathOf(configs.NEWPID)
	if !cfg.Namespaces.Contains(configs.NEWPID) || path == "" {
		return nil, nil
	}
	chain, err := pidNSChain(path)
	if err != nil || len(chain) == 0 {
		return nil, err
	}
	idx, err := scanPidNS()
	if err != nil {
		return nil, err
	}
	st, err := pidNSStateIn(tx)
	if err != nil {
		return nil, err
	}
	return pidNSConflicts(z.Name, pidNSSharers(idx.tasks(chain), st.members), st.policies, lsm), nil
}
