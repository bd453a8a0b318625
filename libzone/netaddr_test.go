package libzone

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// netnsProcess starts a process in a network namespace of its own with
// 192.0.2.7 and 2001:db8::7 on a veth (not every kernel has the dummy
// driver), and returns its pid.
func netnsProcess(t *testing.T) int {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	cmd := exec.Command("unshare", "-n", "sh", "-c",
		"ip link add d0 type veth peer name d1 && ip addr add 192.0.2.7/24 dev d0 && ip -6 addr add 2001:db8::7/64 dev d0 nodad && ip link set lo up && ip link set d0 up && echo ready && exec sleep 60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("namespace setup: %q, %v", buf, err)
	}
	return cmd.Process.Pid
}

func TestMemberAddrs(t *testing.T) {
	pid := netnsProcess(t)
	var own configs.Config
	own.Namespaces.Add(configs.NEWNET, "")
	got, err := memberAddrs(&own, pid)
	if err != nil {
		t.Fatal(err)
	}
	// The veth's link-local address comes and goes with the kernel's
	// addrgenmode; the configured ones and no loopback are what counts.
	if !slices.Contains(got, "192.0.2.7") || !slices.Contains(got, "2001:db8::7") ||
		slices.Contains(got, "127.0.0.1") || slices.Contains(got, "::1") {
		t.Errorf("memberAddrs = %v", got)
	}
	var host configs.Config // no network namespace: the host's addresses are no member's
	if got, err := memberAddrs(&host, pid); err != nil || got != nil {
		t.Errorf("memberAddrs in the host's namespace = %v, %v; want none", got, err)
	}
}

// The cost that every create pays for registering addresses.
func BenchmarkMemberAddrs(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	cmd := exec.Command("unshare", "-n", "sleep", "60")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var own configs.Config
	own.Namespaces.Add(configs.NEWNET, "")
	for b.Loop() {
		if _, err := memberAddrs(&own, cmd.Process.Pid); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBareNetns(t *testing.T) {
	newNet := configs.Namespaces{{Type: configs.NEWNET}, {Type: configs.NEWPID}}
	hook := configs.HookList{configs.NewCommandHook(&configs.Command{Path: "/bin/true"})}
	for _, tc := range []struct {
		name string
		cfg  configs.Config
		want bool
	}{
		{"new namespace, loopback only", configs.Config{Namespaces: newNet, Networks: []*configs.Network{{Type: "loopback"}}}, true},
		{"the host's namespace", configs.Config{Namespaces: configs.Namespaces{{Type: configs.NEWPID}}}, false},
		{"a namespace joined by path", configs.Config{Namespaces: configs.Namespaces{{Type: configs.NEWNET, Path: "/run/netns/x"}}}, false},
		{"a device moved in", configs.Config{Namespaces: newNet, NetDevices: map[string]*configs.LinuxNetDevice{"eth1": {}}}, false},
		{"a route", configs.Config{Namespaces: newNet, Routes: []*configs.Route{{}}}, false},
		{"a prestart hook", configs.Config{Namespaces: newNet, Hooks: configs.Hooks{configs.Prestart: hook}}, false},
		{"a createRuntime hook", configs.Config{Namespaces: newNet, Hooks: configs.Hooks{configs.CreateRuntime: hook}}, false},
		{"a createContainer hook", configs.Config{Namespaces: newNet, Hooks: configs.Hooks{configs.CreateContainer: hook}}, false},
		{"a poststart hook only", configs.Config{Namespaces: newNet, Hooks: configs.Hooks{configs.Poststart: hook}}, true},
	} {
		if got := bareNetns(&tc.cfg); got != tc.want {
			t.Errorf("%s: bareNetns = %v, want %v", tc.name, got, tc.want)
		}
	}
}
