package libzone

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"

	"github.com/rauha-runtime/rauha/zone"
)

// seedSpecs are realistic configs: what "rauha spec" writes (root and
// rootless) and what podman and docker hand to a runtime, trimmed.
func seedSpecs(f *testing.F) {
	for _, rootless := range []bool{false, true} {
		if b, err := json.Marshal(ExampleSpec(rootless)); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"ociVersion":"1.0.2-dev","process":{"user":{"uid":0,"gid":0},"args":["sh"],"cwd":"/"},"root":{"path":"rootfs"},"linux":{"cgroupsPath":"/rauha-fuzz/x","namespaces":[{"type":"pid"},{"type":"mount"}],"maskedPaths":["/proc/kcore"],"readonlyPaths":["/proc/sys"]}}`,
		`{"ociVersion":"1.0.0","process":{"terminal":true,"user":{"uid":1000,"gid":1000,"additionalGids":[10]},"args":["/bin/sh","-c","id"],"env":["PATH=/bin"],"cwd":"/home","capabilities":{"bounding":["CAP_CHOWN"],"effective":["CAP_CHOWN"],"permitted":["CAP_CHOWN"]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}],"oomScoreAdj":100},"root":{"path":"/var/lib/containers/rootfs","readonly":true},"hostname":"pod","mounts":[{"destination":"/proc","type":"proc","source":"proc"},{"destination":"/dev","type":"tmpfs","source":"tmpfs","options":["nosuid","mode=755"]},{"destination":"/data","type":"bind","source":"/srv/data","options":["rbind","ro"]}],"annotations":{"org.rauha.zone":"web","org.rauha.policy":"strict"},"linux":{"cgroupsPath":"machine.slice:libpod:abc","uidMappings":[{"containerID":0,"hostID":100000,"size":65536}],"gidMappings":[{"containerID":0,"hostID":100000,"size":65536}],"resources":{"memory":{"limit":536870912},"cpu":{"shares":512,"quota":50000,"period":100000},"pids":{"limit":100},"devices":[{"allow":false,"access":"rwm"},{"allow":true,"type":"c","major":1,"minor":3,"access":"rwm"}]},"namespaces":[{"type":"pid"},{"type":"network","path":"/proc/1/ns/net"},{"type":"user"},{"type":"cgroup"}],"sysctl":{"net.ipv4.ip_forward":"1"},"seccomp":{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"}]},"devices":[{"path":"/dev/fuse","type":"c","major":10,"minor":229,"fileMode":438}]}}`,
		`{"ociVersion":"1.2.0","process":{"args":["x"],"cwd":"/proc/self/fd/7"},"root":{"path":"../../.."},"linux":{"mountLabel":"","rootfsPropagation":"shared","intelRdt":{"closID":"x"},"personality":{"domain":"LINUX32"},"timeOffsets":{"monotonic":{"secs":1}}}}`,
		`{"ociVersion":"2.0.0","root":{"path":"r"},"linux":{}}`,
		`{"ociVersion":"1.0.2","root":{"path":""},"linux":{}}`,
		`{"ociVersion":"1.0.2","root":{"path":"r"}}`,
		`{"ociVersion":"1.0.2"} trailing`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
}

// FuzzSpecConversion feeds config.json bytes through everything create does
// with them before the kernel is involved: parse and validate, libcontainer's
// conversion, and rauha's zone controls. Invariants: no panic; a rejected
// config yields no spec; an accepted one survives a JSON round trip
// unchanged; a converted one names the container, an absolute rootfs and
// its cgroup, and keeps the capabilities within what the policy allows.
func FuzzSpecConversion(f *testing.F) {
	seedSpecs(f)
	// A relative root.path resolves against the working directory.
	f.Chdir(f.TempDir())
	policy, err := zone.ParsePolicy("fuzz.toml", []byte("[syscalls]\ndeny = [\"ptrace\", \"kexec_load\"]\n[resources]\nmemory_limit = \"512M\"\n"), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := parseSpec("config.json", bytes.NewReader(data))
		if err != nil {
			if spec != nil {
				t.Fatal("spec returned with an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		b1, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseSpec("again.json", bytes.NewReader(b1))
		if err != nil {
			t.Fatalf("accepted spec does not parse again: %v\n%s", err, b1)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b1, b2) {
			t.Fatalf("JSON round trip changed the spec:\n%s\n%s", b1, b2)
		}
		cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
			CgroupName: "fuzz",
			Spec:       spec,
		})
		if err != nil {
			return
		}
		if !filepath.IsAbs(cfg.Rootfs) {
			t.Fatalf("rootfs %q is not absolute", cfg.Rootfs)
		}
		if cfg.Cgroups == nil || cfg.Cgroups.Resources == nil {
			t.Fatal("converted config has no cgroup")
		}
		if cfg.Hostname != spec.Hostname {
			t.Fatalf("hostname %q became %q", spec.Hostname, cfg.Hostname)
		}
		for _, c := range applyConfigControls(cfg, policy) {
			if strings.Contains(c, "\n") {
				t.Fatalf("conflict is not one line: %q", c)
			}
		}
		if m := cfg.Cgroups.Resources.Memory; m <= 0 || m > 512<<20 {
			t.Fatalf("memory limit %d escapes the policy's 512M", m)
		}
		for _, name := range policy.Syscalls.Deny {
			var rules []*configs.Syscall
			for _, sc := range cfg.Seccomp.Syscalls {
				if sc.Name == name {
					rules = append(rules, sc)
				}
			}
			if len(rules) != 1 || rules[0].Action != configs.Errno || len(rules[0].Args) != 0 {
				t.Fatalf("denied syscall %s has rules %+v, want one unconditional errno", name, rules)
			}
		}
	})
}

// FuzzParseProcess feeds exec --process bytes through parsing and
// validation (internal/process's FuzzNewProcess fuzzes the conversion to a
// libcontainer process). Invariants: no panic; an accepted process has args
// and an absolute cwd, and survives a JSON round trip.
func FuzzParseProcess(f *testing.F) {
	if b, err := json.Marshal(ExampleSpec(false).Process); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`{"args":["sh","-c","echo hi"],"cwd":"/","env":["PATH=/bin"],"user":{"uid":1000,"gid":1000}}`,
		`{"terminal":true,"consoleSize":{"height":24,"width":80},"args":["top"],"cwd":"/tmp","capabilities":{"bounding":["CAP_KILL"],"ambient":["CAP_KILL"]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":10,"soft":10}],"noNewPrivileges":true,"execCPUAffinity":{"initial":"0-1","final":"0"}}`,
		`{"args":["x"],"cwd":"/proc/self/fd/7"}`,
		`{"args":["x"],"cwd":"relative"}`,
		`{"args":[],"cwd":"/"}`,
		`{"args":["x"],"cwd":"/","rlimits":[{"type":"RLIMIT_BOGUS"}]}`,
		`{"args":["x"],"cwd":"/","user":{"uid":4294967295}}`,
		`{"args":["x"],"cwd":"/","scheduler":{"policy":"SCHED_FIFO","priority":99},"ioPriority":{"class":"IOPRIO_CLASS_RT","priority":7}}`,
		`{`, `null`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProcess("p.json", bytes.NewReader(data))
		if err != nil {
			if p != nil {
				t.Fatal("process returned with an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if len(p.Args) == 0 || !filepath.IsAbs(p.Cwd) {
			t.Fatalf("accepted process without args or with a relative cwd: %+v", p)
		}
		b1, _ := json.Marshal(p)
		again, err := parseProcess("again.json", bytes.NewReader(b1))
		if err != nil {
			t.Fatalf("accepted process does not parse again: %v\n%s", err, b1)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b1, b2) {
			t.Fatalf("JSON round trip changed the process:\n%s\n%s", b1, b2)
		}
	})
}
