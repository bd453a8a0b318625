package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rauha-runtime/rauha/bpf"
)

// runtime is one binary with its own state root; rauha variants differ in
// the annotations their bundles carry (which zone policy they get).
type runtime struct {
	name        string
	bin         string
	root        string
	rauha       bool
	zones       bool // a rauha build (also one compared as a runc): cleanup removes its zones and pins
	annotations map[string]string
	errLog      *os.File // stderr of every call, read back when one fails
}

func (r *runtime) version() string {
	out, err := exec.Command(r.bin, "--version").Output()
	if err != nil {
		return "unknown: " + err.Error()
	}
	return strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
}

// call is one timed runtime invocation.
type call struct {
	dur    time.Duration
	cpu    time.Duration // user + system time of the runtime and what it waited for
	rssKiB int64
}

// invoke runs the runtime with --root and args; stdio are files (never
// pipes), so a container init that inherits them cannot hold the call open.
func (r *runtime) invoke(stdout *os.File, args ...string) (call, error) {
	cmd := exec.Command(r.bin, append([]string{"--root", r.root}, args...)...)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return call{}, err
	}
	defer devnull.Close()
	cmd.Stdin = devnull
	cmd.Stdout = stdout
	if stdout == nil {
		cmd.Stdout = devnull
	}
	cmd.Stderr = r.errLog
	off, _ := r.errLog.Seek(0, 2)
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	c := call{dur: d}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			c.rssKiB = ru.Maxrss
			c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if err != nil {
		return c, fmt.Errorf("%s %s: %w: %s", r.name, strings.Join(args, " "), err, r.tail(off))
	}
	return c, nil
}

// tail is what the runtime wrote to stderr since offset off.
func (r *runtime) tail(off int64) string {
	buf := make([]byte, 2048)
	n, _ := r.errLog.ReadAt(buf, off)
	return strings.TrimSpace(string(buf[:n]))
}

// bench holds the runtimes and everything created, so cleanup can undo it.
type bench struct {
	cfg      config
	base     map[string]any // the base bundle's config.json
	rootfs   string
	runtimes []*runtime

	mu   sync.Mutex
	live map[*runtime]map[string]bool // containers that may exist
}

func newBench(c config) (*bench, error) {
	data, err := os.ReadFile(filepath.Join(c.bundle, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("base bundle: %w", err)
	}
	var base map[string]any
	if err := json.Unmarshal(data, &base); err != nil {
		return nil, fmt.Errorf("base bundle config.json: %w", err)
	}
	b := &bench{cfg: c, base: base, rootfs: filepath.Join(c.bundle, "rootfs"), live: map[*runtime]map[string]bool{}}
	if _, err := os.Stat(filepath.Join(b.rootfs, "rauhabench")); err != nil {
		return nil, fmt.Errorf("the bundle's rootfs has no probe binary: %w", err)
	}
	if err := os.MkdirAll(c.work, 0o700); err != nil {
		return nil, err
	}
	add := func(name, bin string, rauha bool, ann map[string]string) error {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("runtime %s: %w", name, err)
		}
		root := filepath.Join(c.work, "root-"+name)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return err
		}
		log, err := os.Create(filepath.Join(c.work, name+".stderr"))
		if err != nil {
			return err
		}
		r := &runtime{name: name, bin: bin, root: root, rauha: rauha, annotations: ann, errLog: log}
		// Another rauha build passed as -runc leaves zones and BPF pins
		// (programs attached host-wide) like rauha itself.
		r.zones = rauha || strings.HasPrefix(r.version(), "rauha ")
		b.runtimes = append(b.runtimes, r)
		return nil
	}
	for _, r := range c.runcs {
		name, bin, ok := strings.Cut(r, "=")
		if !ok {
			return nil, fmt.Errorf("-runc %q: want NAME=PATH", r)
		}
		if err := add(name, bin, false, nil); err != nil {
			// runc 1.5 is built on demand; without it the run still compares with 1.1.5.
			fmt.Fprintln(os.Stderr, "bench: skipping", err)
		}
	}
	if len(b.runtimes) == 0 {
		return nil, errors.New("no runc to compare with")
	}
	// rauha: a container without annotations (its own zone, preset
	// standard), the two ends of the zone-cost comparison, and a zone with
	// egress rules (the network part's, which differs from privileged in
	// those rules alone), and the cost of bridged networking against
	// isolated: in each container's own zone (each cycle makes a zone, a
	// veth pair and a lease, and takes the root's spare bridge, which the
	// previous cycle's delete parked) and in one named zone that keeps its
	// bridge (a veth pair and a lease).
	egress := filepath.Join(c.work, "egress.toml")
	if err := os.WriteFile(egress, []byte(egressPolicy(c.netAddr)), 0o644); err != nil {
		return nil, err
	}
	isolated, bridged := filepath.Join(c.work, "isolated.toml"), filepath.Join(c.work, "bridged.toml")
	if err := os.WriteFile(isolated, []byte("[network]\nmode = \"isolated\"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(bridged, []byte("[network]\nmode = \"bridged\"\n"), 0o644); err != nil {
		return nil, err
	}
	variants := []struct{ name, policy string }{
		{"rauha", ""}, {"rauha-privileged", "privileged"}, {"rauha-strict", "strict"}, {"rauha-egress", egress},
		{"rauha-isolated", isolated}, {"rauha-bridged", bridged}, {"rauha-bridged-zone", bridged},
	}
	for _, p := range c.policies {
		name, policy, ok := strings.Cut(p, "=")
		if !ok || name == "" || policy == "" {
			return nil, fmt.Errorf("-policy %q: want NAME=POLICY", p)
		}
		variants = append(variants, struct{ name, policy string }{"rauha-" + name, policy})
	}
	for _, v := range variants {
		var ann map[string]string
		if v.policy != "" {
			ann = map[string]string{"org.rauha.policy": v.policy}
		}
		if v.name == "rauha-bridged-zone" {
			ann["org.rauha.zone"] = bridgedZone
		}
		if err := add(v.name, c.rauha, true, ann); err != nil {
			return nil, err
		}
		if c.baseRauha != "" {
			if err := add("base-"+v.name, c.baseRauha, true, ann); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// bridgedZone is the named bridged zone of rauha-bridged-zone.
const bridgedZone = "bench-bridged"

func (b *bench) rt(name string) *runtime {
	for _, r := range b.runtimes {
		if r.name == name {
			return r
		}
	}
	return nil
}

// runcs are the comparison runtimes, in -runc order.
func (b *bench) runcs() []*runtime {
	var out []*runtime
	for _, r := range b.runtimes {
		if !r.rauha {
			out = append(out, r)
		}
	}
	return out
}

// bundle writes a bundle directory for one container: the base config with
// args, its own absolute cgroup and the runtime's annotations; the rootfs is
// shared (absolute path), so hundreds of bundles cost one config.json each.
// edit, when given, changes the config last.
func (b *bench) bundle(r *runtime, id string, args []string, extra map[string]string, edit ...func(cfg map[string]any)) (string, error) {
	var cfg map[string]any
	data, _ := json.Marshal(b.base)
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", err
	}
	proc := cfg["process"].(map[string]any)
	proc["args"] = args
	proc["terminal"] = false
	cfg["root"] = map[string]any{"path": b.rootfs, "readonly": false}
	linux := cfg["linux"].(map[string]any)
	linux["cgroupsPath"] = b.cfg.cgPrefix + "/" + r.name + "/" + id
	ann := map[string]any{}
	for k, v := range r.annotations {
		ann[k] = v
	}
	for k, v := range extra {
		ann[k] = v
	}
	if len(ann) > 0 {
		cfg["annotations"] = ann
	}
	for _, e := range edit {
		e(cfg)
	}
	dir := filepath.Join(b.cfg.work, "bundles", r.name, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), out, 0o644)
}

func (b *bench) track(r *runtime, id string, alive bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live[r] == nil {
		b.live[r] = map[string]bool{}
	}
	if alive {
		b.live[r][id] = true
	} else {
		delete(b.live[r], id)
	}
}

// cleanup force-deletes every container the bench may have left, then its
// cgroups, state roots, rauha's BPF pin directories and the scratch tree.
func (b *bench) cleanup() error {
	var errs []error
	b.mu.Lock()
	live := b.live
	b.live = map[*runtime]map[string]bool{}
	b.mu.Unlock()
	for r, ids := range live {
		for id := range ids {
			if _, err := r.invoke(nil, "delete", "--force", id); err != nil && !strings.Contains(err.Error(), "not exist") {
				errs = append(errs, err)
			}
		}
	}
	for _, r := range b.runtimes {
		if r.zones {
			// zones named by annotation outlive their containers
			_, _ = r.invoke(nil, "zone", "delete", "--force", updateZone)
			_, _ = r.invoke(nil, "zone", "delete", "--force", bridgedZone)
			_, _ = r.invoke(nil, "zone", "delete", "--force", zoneNetClientZone)
			_, _ = r.invoke(nil, "zone", "delete", "--force", zoneNetServerZone)
			// A root without zones: reconcile uninstalls its programs,
			// pins and anchor cgroup; removePinDir catches what is left.
			_, _ = r.invoke(nil, "zone", "reconcile")
			if err := removePinDir(r.root); err != nil {
				errs = append(errs, err)
			}
		}
		r.errLog.Close()
	}
	errs = append(errs, removeCgroups(b.cfg.cgPrefix))
	if err := os.RemoveAll(b.cfg.work); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removePinDir removes the pin directory rauha made for a root.
func removePinDir(root string) error {
	dir := bpf.PinDirFor(root)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pin dir %s: %w", dir, err)
	}
	fmt.Fprintln(os.Stderr, "bench: removed", dir)
	return nil
}

// removeCgroups removes prefix (ours alone) from every hierarchy, deepest
// directories first; a cgroup that still has tasks is reported, not forced.
func removeCgroups(prefix string) error {
	hier, _ := filepath.Glob("/sys/fs/cgroup/*")
	var errs []error
	for _, h := range hier {
		top := filepath.Join(h, prefix)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// waitExit returns when pid has exited (gone, or a zombie waiting for a
// lazy reaper), polling /proc every 100 µs.
func waitExit(pid int) error {
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(stat)
		if err != nil {
			return nil
		}
		if i := bytes.LastIndexByte(data, ')'); i > 0 && i+2 < len(data) {
			if s := data[i+2]; s == 'Z' || s == 'X' {
				return nil
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	return fmt.Errorf("pid %d still running after 10 s", pid)
}

func readPid(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "%d", &pid); err != nil {
		return 0, fmt.Errorf("pid file %s: %w", path, err)
	}
	return pid, nil
}
