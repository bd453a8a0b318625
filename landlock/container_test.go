package landlock

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	devices "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"golang.org/x/sys/unix"

	_ "github.com/opencontainers/cgroups/devices" // the device controller manager
)

// cgroupPrefix is this package's test prefix; every container cgroup lives
// beneath it and the tests remove what they created.
const cgroupPrefix = "/rauha-test-landlock"

var dockerCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}

// containerConfig is a docker-like container: its own namespaces, docker's
// capabilities (no CAP_SYS_ADMIN, so the shim needs no_new_privs), the usual
// mounts plus a tmpfs /tmp and a bind-mounted /etc/hosts that is not in the
// image (libcontainer creates the mount point during its setup).
func containerConfig(t *testing.T, rootfs, cgroupPath, hosts string) *configs.Config {
	var allowed []*devices.Rule
	for _, d := range specconv.AllowedDevices {
		allowed = append(allowed, &d.Rule)
	}
	const noexec = unix.MS_NOEXEC | unix.MS_NOSUID | unix.MS_NODEV
	caps := &configs.Capabilities{Bounding: dockerCaps, Permitted: dockerCaps, Effective: dockerCaps}
	return &configs.Config{
		Rootfs:       rootfs,
		Capabilities: caps,
		Namespaces: configs.Namespaces{{Type: configs.NEWNS}, {Type: configs.NEWUTS}, {Type: configs.NEWIPC},
			{Type: configs.NEWPID}, {Type: configs.NEWNET}},
		Cgroups:       &cgroups.Cgroup{Path: cgroupPath, Resources: &cgroups.Resources{Devices: allowed}},
		Devices:       specconv.AllowedDevices,
		Hostname:      "landlock",
		MaskPaths:     []string{"/proc/kcore", "/sys/firmware"},
		ReadonlyPaths: []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"},
		Mounts: []*configs.Mount{
			{Source: "proc", Destination: "/proc", Device: "proc", Flags: noexec},
			{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755"},
			{Source: "devpts", Destination: "/dev/pts", Device: "devpts", Flags: unix.MS_NOSUID | unix.MS_NOEXEC,
				Data: "newinstance,ptmxmode=0666,mode=0620,gid=5"},
			{Source: "shm", Destination: "/dev/shm", Device: "tmpfs", Flags: noexec, Data: "mode=1777,size=65536k"},
			{Source: "sysfs", Destination: "/sys", Device: "sysfs", Flags: noexec | unix.MS_RDONLY},
			{Source: "tmpfs", Destination: "/tmp", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV},
			{Source: hosts, Destination: "/etc/hosts", Device: "bind", Flags: unix.MS_BIND | unix.MS_REC},
		},
		Rlimits: []configs.Rlimit{{Type: unix.RLIMIT_NOFILE, Hard: 1024, Soft: 1024}},
	}
}

// removeTestCgroups removes the prefix directories the cgroup managers
// created in every hierarchy, once libcontainer removed the container's.
func removeTestCgroups(t *testing.T) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + cgroupPrefix)
	more, _ := filepath.Glob("/sys/fs/cgroup/*/*" + cgroupPrefix) // e.g. name=systemd
	for _, d := range append(dirs, more...) {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			t.Errorf("remove test cgroup %s: %v", d, err)
		}
	}
}

// lineReader hands out the lines a container writes to a pipe.
func lineReader(t *testing.T) (*os.File, chan string) {
	r, w, err := os.Pipe()
	mustOK(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return w, lines
}

func readUntil(t *testing.T, lines chan string, last string) []string {
	t.Helper()
	var got []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %q; got %q", last, got)
			}
			got = append(got, l)
			if l == last {
				return got
			}
		case <-timeout:
			t.Fatalf("no %q after 30s; got %q", last, got)
		}
	}
}

func expectAll(t *testing.T, got []string, want ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range got {
		have[strings.TrimSpace(l)] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("missing %q in output %q", w, got)
		}
	}
}

// newContainer creates a container from containerConfig, changed by mutate
// when not nil, and destroys it (and the test cgroups) at the end.
func newContainer(t *testing.T, mutate func(*configs.Config)) *libcontainer.Container {
	t.Helper()
	rootfs := newRootfs(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	mustOK(t, os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644))
	id := fmt.Sprintf("landlock-%d", time.Now().UnixNano())
	config := containerConfig(t, rootfs, cgroupPrefix+"/"+id, hosts)
	if mutate != nil {
		mutate(config)
	}
	t.Cleanup(func() { removeTestCgroups(t) })
	container, err := libcontainer.Create(t.TempDir(), id, config)
	mustOK(t, err)
	t.Cleanup(func() {
		if err := container.Destroy(); err != nil {
			t.Errorf("destroy container: %v", err)
		}
	})
	return container
}

// TestContainer runs a real libcontainer container whose init and an exec'd
// process are wrapped in the shim.
func TestContainer(t *testing.T) {
	requireLandlock(t, 1)
	container := newContainer(t, nil)

	rules := Rules{Writable: []string{"/tmp"}, Deny: []string{"/etc/shadow"}, ExecDeny: []string{"/opt/denied/true"}}
	out, lines := lineReader(t)
	init := &libcontainer.Process{
		Args: []string{"sh", "-c", probe + `
p shadow cat /etc/shadow
p passwd cat /etc/passwd
p hosts-bind-mount cat /etc/hosts
p tmpfs-tmp sh -c 'echo x > /tmp/f && cat /tmp/f'
p write-etc sh -c 'echo x > /etc/f'
p proc cat /proc/self/status
p sys ls /sys/kernel
p dev-null sh -c 'echo x > /dev/null'
p dev-pts ls /dev/pts
p pipe sh -c 'echo a | cat | grep -q a'
p exec-denied /opt/denied/true
p exec-sibling /opt/denied/echo
echo "nnp $(grep NoNewPrivs /proc/self/status | cut -f2)"
echo init-done
exec sleep 60`},
		Env:    []string{"PATH=/bin", "HOME=/"},
		Cwd:    "/",
		Stdout: out, Stderr: out,
		Init: true,
	}
	rs, sum, err := CreateRuleset(rules)
	mustOK(t, err)
	defer rs.Close()
	cleanup, err := Wrap(init, rs, nil)
	mustOK(t, err)
	mustOK(t, container.Start(init))
	cleanup()
	pid, err := init.Pid()
	mustOK(t, err)
	sum, err = Populate(rs, fmt.Sprintf("/proc/%d/root", pid), rules)
	mustOK(t, err)
	t.Logf("init ruleset: %d rules, notes %q", sum.RuleCount, sum.Notes)
	mustOK(t, container.Exec())
	got := readUntil(t, lines, "init-done")
	expectAll(t, got, "shadow denied", "passwd ok", "hosts-bind-mount ok", "tmpfs-tmp ok", "write-etc denied",
		"proc ok", "sys ok", "dev-null ok", "dev-pts ok", "pipe ok", "exec-denied denied", "exec-sibling ok", "nnp 1")

	// An exec'd process gets its own domain, built on the running container.
	execOut, execLines := lineReader(t)
	proc := &libcontainer.Process{
		Args:   []string{"sh", "-c", probe + "p exec-shadow cat /etc/shadow\np exec-hosts cat /etc/hosts\np exec-kill-init kill -0 1\necho exec-done"},
		Env:    []string{"PATH=/bin"},
		Cwd:    "/",
		Stdout: execOut, Stderr: execOut,
	}
	rs2, _, err := BuildRuleset(fmt.Sprintf("/proc/%d/root", pid), rules)
	mustOK(t, err)
	defer rs2.Close()
	cleanup, err = Wrap(proc, rs2, nil)
	mustOK(t, err)
	mustOK(t, container.Run(proc))
	cleanup()
	if _, err := proc.Wait(); err != nil {
		t.Errorf("exec process: %v", err)
	}
	expectAll(t, readUntil(t, execLines, "exec-done"), "exec-shadow denied", "exec-hosts ok", "exec-kill-init ok")

	mustOK(t, container.Signal(unix.SIGKILL))
	init.Wait()
}
