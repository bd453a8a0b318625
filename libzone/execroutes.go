package libzone

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/pidns"
	"github.com/rauha-runtime/rauha/zone"
)

// Exec rules (exec.allow, exec.deny) judge which files run, but execve of
// an allowed or undenied path is not the only way a file's code runs: a
// binary written to a writable path can be executed (exec.deny judges the
// path, not the copy), mapped with mmap(PROT_EXEC), or loaded by the dynamic
// loader ("ld.so /tmp/x"), and a memfd can be executed with execveat.
// Landlock and the deny hooks see none of the latter. So in a zone with exec
// rules, on both backends:
//   - every place the workload can write a file is mounted noexec: execve
//     (EACCES), mmap(PROT_EXEC) (EPERM) and so ld.so refuse what is there;
//   - vm.memfd_noexec is 2 in the container's own pid namespace:
//     memfd_create(MFD_EXEC) is refused (EACCES) and every other memfd is
//     sealed non-executable, so execveat of a memfd fails (EACCES); where
//     that sysctl cannot be used, seccomp denies memfd_create (EPERM).
//
// What stays possible: an allowed program reading a script (sh /tmp/x.sh)
// or generating code in memory (a JIT, or a loader mapping bytes it holds in
// anonymous memory or a memfd): exec rules judge files, not memory.

// hasExecRules reports whether the policy restricts what may be executed.
// An audit zone denies nothing, so it gets none of the closures either.
func hasExecRules(p *zone.Policy) bool {
	return p.Zone.Mode != zone.ModeAudit && (len(p.Exec.Allow) > 0 || len(p.Exec.Deny) > 0)
}

// fileless mount types: no workload can create a file there.
var fileless = []string{"proc", "sysfs", "cgroup", "cgroup2"}

// writablePlaces lists where a member's workload can write files: mounts of
// cfg (indexes) and paths on the root file system that are not mount
// points. With writable_paths set, the Landlock domain allows writes only
// there (a mount that holds one of them counts whole); without, every
// mount that is not read-only, and open names the root file system when it
// is writable: it cannot be made noexec without stopping every binary.
func writablePlaces(cfg *configs.Config, p *zone.Policy) (mounts []int, rootPaths []string, open []string) {
	usable := func(i int) bool {
		m := cfg.Mounts[i]
		return m.Flags&unix.MS_RDONLY == 0 && !slices.Contains(fileless, m.Device)
	}
	add := func(i int) {
		if usable(i) && !slices.Contains(mounts, i) {
			mounts = append(mounts, i)
		}
	}
	w := p.Filesystem.WritablePaths
	if w == nil {
		for i := range cfg.Mounts {
			add(i)
		}
		if !cfg.Readonlyfs {
			open = append(open, "exec: the root file system is writable and [filesystem] writable_paths is not set, so a binary written anywhere could run (set root.readonly or list writable_paths; they are mounted noexec)")
		}
		return mounts, nil, open
	}
	// Landlock and libcontainer follow symlinks inside the rootfs, so
	// paths are compared as they resolve there.
	dests := make([]string, len(cfg.Mounts))
	for i, m := range cfg.Mounts {
		dests[i] = resolveIn(cfg.Rootfs, m.Destination)
	}
	for _, wp := range *w {
		if slices.ContainsFunc(cfg.Devices, func(d *config.Device) bool { return d.Path == wp }) {
			continue // a device node holds no file
		}
		wp = resolveIn(cfg.Rootfs, wp)
		enclosing := -1
		for i, d := range dests {
			switch {
			case within(d, wp):
				add(i) // the writable tree itself, or a mount inside it
			case within(wp, d): // the writable path is inside mount d (equal ones took the case above)
				if enclosing < 0 || len(d) > len(dests[enclosing]) {
					enclosing = i
				}
			}
		}
		if enclosing >= 0 {
			add(enclosing)
		} else if !slices.Contains(dests, wp) && !cfg.Readonlyfs && !slices.Contains(rootPaths, wp) {
			rootPaths = append(rootPaths, wp)
		}
	}
	return mounts, rootPaths, open
}

// resolveIn is container path p with the symlinks on the rootfs followed
// (within it); p itself when it cannot be resolved.
func resolveIn(rootfs, p string) string {
	full, err := securejoin.SecureJoin(rootfs, p)
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(rootfs, full)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	return filepath.Join("/", rel)
}

// execRoutes returns what in a member's configuration keeps a file it
// writes runnable although the zone has exec rules, for admission and
// verify: a writable root file system without writable_paths, and
// CAP_SYS_ADMIN, which can remount a writable path exec.
func execRoutes(cfg *configs.Config, p *zone.Policy) []string {
	if !hasExecRules(p) {
		return nil
	}
	_, _, open := writablePlaces(cfg, p)
	if keepsCap(cfg, p, "CAP_SYS_ADMIN") {
		open = append(open, "exec: CAP_SYS_ADMIN can remount a writable path exec (drop the capability)")
	}
	return open
}

// loaderDirs are where images keep the dynamic loader; the multiarch
// directories (x86_64-linux-gnu, ...) below /lib and /usr/lib are added.
var loaderDirs = []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"}

// loaderRoutes names the dynamic loaders an exec allow-list lets run. A
// loader maps any binary it can read, wherever it is (Landlock has no check
// on mmap, and bpf-lsm judges the allow-list with the same Landlock domain),
// so the allow-list does not hold for dynamic binaries while one is
// allowed. An image of static binaries has none to allow.
func loaderRoutes(cfg *configs.Config, p *zone.Policy) []string {
	if !hasExecRules(p) || len(p.Exec.Allow) == 0 {
		return nil
	}
	allowed := func(q string) bool {
		return slices.ContainsFunc(p.Exec.Allow, func(a string) bool {
			a = resolveIn(cfg.Rootfs, a)
			return within(q, a)
		})
	}
	dirs := slices.Clone(loaderDirs)
	for _, base := range []string{"/lib", "/usr/lib"} {
		entries, _ := os.ReadDir(filepath.Join(cfg.Rootfs, resolveIn(cfg.Rootfs, base)))
		for _, e := range entries {
			if strings.Contains(e.Name(), "-linux-") {
				dirs = append(dirs, base+"/"+e.Name())
			}
		}
	}
	var seen, out []string
	for _, d := range dirs {
		rd := resolveIn(cfg.Rootfs, d)
		entries, _ := os.ReadDir(filepath.Join(cfg.Rootfs, rd))
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "ld-") || !strings.Contains(e.Name(), ".so") {
				continue
			}
			ld := resolveIn(cfg.Rootfs, rd+"/"+e.Name())
			if slices.Contains(seen, ld) {
				continue
			}
			seen = append(seen, ld)
			if allowed(ld) {
				out = append(out, fmt.Sprintf("exec.allow: the dynamic loader %s is allowed, and it runs any binary it can read, outside the allowed paths too (no backend judges the allow-list on mmap): allow static binaries only", ld))
			}
		}
	}
	return out
}

// closeExecRoutes makes every writable place of a member with exec rules
// noexec: a flag on the mounts of its configuration, and a bind mount onto
// itself for a writable path on the root file system. The bind mounts come
// first, so that mounts of the configuration below them stay on top. Where
// vm.memfd_noexec cannot be used, memfd_create is denied.
func closeExecRoutes(cfg *configs.Config, p *zone.Policy) error {
	if !hasExecRules(p) {
		return nil
	}
	if !memfdBySysctl(cfg) {
		denySyscalls(cfg, []string{"memfd_create"})
	}
	mounts, rootPaths, _ := writablePlaces(cfg, p)
	for _, i := range mounts {
		cfg.Mounts[i].Flags |= unix.MS_NOEXEC
		cfg.Mounts[i].ClearedFlags &^= unix.MS_NOEXEC
	}
	var binds []*configs.Mount
	for _, wp := range rootPaths {
		src, err := securejoin.SecureJoin(cfg.Rootfs, wp)
		if err != nil {
			return fmt.Errorf("writable path %s: %w", wp, err)
		}
		fi, err := os.Stat(src)
		if os.IsNotExist(err) {
			continue // not there, and its parent is not writable: nothing can be written
		} else if err != nil {
			return fmt.Errorf("writable path %s: %w", wp, err)
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		binds = append(binds, &configs.Mount{
			Source:      src,
			Destination: wp,
			Device:      "bind",
			Flags:       unix.MS_BIND | unix.MS_REC | unix.MS_NOEXEC,
		})
	}
	cfg.Mounts = append(binds, cfg.Mounts...)
	return nil
}

// noexecPaths are the container paths that must be on a noexec mount in a
// member with exec rules (what mountNoexec made so).
func noexecPaths(cfg *configs.Config, p *zone.Policy) []string {
	mounts, rootPaths, _ := writablePlaces(cfg, p)
	out := slices.Clone(rootPaths)
	for _, i := range mounts {
		out = append(out, cfg.Mounts[i].Destination)
	}
	return out
}

// memfdBySysctl reports whether a member's memfds are made non-executable
// by vm.memfd_noexec=2 in its pid namespace: the kernel keeps the value per
// pid namespace (Linux 6.6 or later: 6.3 to 6.5 let MFD_EXEC through) and
// the member has a pid namespace of its own (raising the value of a shared
// one would change it for every process there). Otherwise its seccomp
// profile denies memfd_create altogether (EPERM).
func memfdBySysctl(cfg *configs.Config) bool {
	return pidns.Supported() && privateNamespace(cfg, configs.NEWPID)
}

// memfdDenied reports whether cfg's seccomp profile refuses memfd_create.
func memfdDenied(cfg *configs.Config) bool {
	return cfg.Seccomp != nil && slices.ContainsFunc(cfg.Seccomp.Syscalls, func(sc *configs.Syscall) bool {
		return sc.Name == "memfd_create" && sc.Action == configs.Errno && len(sc.Args) == 0
	})
}

// forbidMemfdExec raises vm.memfd_noexec to 2 in the pid namespace of pid,
// a member's init that has not run user code yet.
func forbidMemfdExec(pid int) error {
	if err := pidns.SetMemfdNoexec(pid, 2); err != nil {
		return fmt.Errorf("exec rules: %w", err)
	}
	return nil
}

// verifyExecRoutes adds the checks of a running member with exec rules:
// every writable place is on a noexec mount in the member's own view, and
// memfds cannot be made executable in its pid namespace.
func verifyExecRoutes(name string, cfg *configs.Config, p *zone.Policy, pid int, r *zone.IsolationReport) {
	if !hasExecRules(p) {
		return
	}
	var bad []string
	bad = append(bad, execRoutes(cfg, p)...)
	mi, err := mountsOf(pid)
	if err != nil {
		r.Add(name+": exec: writable paths noexec", false, "%v", err)
	} else {
		var ok []string
		for _, q := range noexecPaths(cfg, p) {
			m := containing(mi, q)
			switch {
			case m == nil:
				bad = append(bad, q+": no mount found")
			case !mountHas(m, "noexec"):
				bad = append(bad, fmt.Sprintf("%s: the mount at %s is not noexec", q, m.Mountpoint))
			default:
				ok = append(ok, q)
			}
		}
		if len(bad) > 0 {
			r.Add(name+": exec: writable paths noexec", false, "a file written there could run: %s", strings.Join(bad, "; "))
		} else {
			r.Add(name+": exec: writable paths noexec", true, "noexec: %s", strings.Join(ok, ", "))
		}
	}
	if routes := loaderRoutes(cfg, p); len(routes) > 0 {
		r.Add(name+": exec: loader", false, "%s", strings.Join(routes, "; "))
	} else if len(p.Exec.Allow) > 0 {
		r.Add(name+": exec: loader", true, "no dynamic loader below the allowed paths")
	}
	if !memfdBySysctl(cfg) {
		if memfdDenied(cfg) {
			r.Add(name+": exec: memfd", true, "memfd_create is denied by seccomp (vm.memfd_noexec needs Linux 6.6 and a pid namespace of the container's own)")
		} else {
			r.Add(name+": exec: memfd", false, "memfd_create is allowed and vm.memfd_noexec cannot be set for this container: a memfd could be executed")
		}
	} else if v, err := pidns.MemfdNoexec(pid); err != nil {
		r.Add(name+": exec: memfd", false, "%v", err)
	} else {
		r.Add(name+": exec: memfd", v >= 2, "vm.memfd_noexec is %d in the container's pid namespace (2 refuses executable memfds)", v)
	}
}

// mountsOf reads the mounts of pid's mount namespace as pid sees them.
func mountsOf(pid int) ([]*mountinfo.Info, error) {
	return mountinfo.PidMountInfo(pid)
}

// containing is the mount a path is on: the topmost of the longest mount
// points that are the path or one of its parents.
func containing(mounts []*mountinfo.Info, p string) *mountinfo.Info {
	var best *mountinfo.Info
	for _, m := range mounts {
		if !within(p, m.Mountpoint) {
			continue
		}
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	return best
}

// mountHas reports whether opt is one of m's per-mount flags (not the
// options of its file system: a read-only bind of a read-write file system
// is "ro" here).
func mountHas(m *mountinfo.Info, opt string) bool {
	return slices.Contains(strings.Split(m.Options, ","), opt)
}
