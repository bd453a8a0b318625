package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Lifecycle rows, in table order.
var lifecycleRows = []string{"create", "start", "state", "exec", "kill", "delete", "cycle", "run"}

// samples collects durations and peak RSS per runtime and row.
type samples struct {
	dur map[string]map[string][]time.Duration
	cpu map[string]map[string][]time.Duration
	rss map[string]map[string]int64
}

func newSamples() *samples {
	return &samples{dur: map[string]map[string][]time.Duration{}, cpu: map[string]map[string][]time.Duration{}, rss: map[string]map[string]int64{}}
}

func (s *samples) add(rt, row string, c call) {
	if s.dur[rt] == nil {
		s.dur[rt] = map[string][]time.Duration{}
		s.cpu[rt] = map[string][]time.Duration{}
		s.rss[rt] = map[string]int64{}
	}
	s.dur[rt][row] = append(s.dur[rt][row], c.dur)
	s.cpu[rt][row] = append(s.cpu[rt][row], c.cpu)
	if c.rssKiB > s.rss[rt][row] {
		s.rss[rt][row] = c.rssKiB
	}
}

// summary of one runtime's row, wall and CPU time.
func (s *samples) summary(rt, row string) row {
	r := summarize(rt, row, s.dur[rt][row], s.rss[rt][row])
	r.CPUMedianMs = summarize(rt, row, s.cpu[rt][row], 0).MedianMs
	return r
}

// lifecycle runs every runtime's sample i before any runtime's sample i+1,
// rotating the order, so load on the shared machine hits all of them alike.
func (b *bench) lifecycle(ctx context.Context, res *results) error {
	s := newSamples()
	var rts []*runtime
	for _, r := range b.runtimes {
		if len(b.cfg.only) == 0 || b.cfg.only[r.name] {
			rts = append(rts, r)
		}
	}
	if len(rts) == 0 {
		return fmt.Errorf("-lifecycle-only: no such runtime")
	}
	const warmup = 2
	for i := 0; i < warmup+b.cfg.samples; i++ {
		for k := range rts {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := rts[(i+k)%len(rts)]
			rec := s
			if i < warmup {
				rec = newSamples() // page cache, first cgroup creation, first BPF load
			}
			if err := b.lifecycleSample(r, rec); err != nil {
				return err
			}
		}
	}
	for _, r := range rts {
		for _, row := range lifecycleRows {
			res.Lifecycle = append(res.Lifecycle, s.summary(r.name, row))
		}
	}
	return nil
}

func (b *bench) lifecycleSample(r *runtime, s *samples) error {
	cycle, err := b.cycle(r)
	if err != nil {
		return err
	}
	s.add(r.name, "cycle", cycle.call)

	// run in the foreground: the runtime waits for true and removes it
	id := "bench-run"
	bundle, err := b.bundle(r, id, []string{"/bin/true"}, nil)
	if err != nil {
		return err
	}
	b.track(r, id, true)
	c, err := r.invoke(nil, "run", "--bundle", bundle, id)
	if err != nil {
		return err
	}
	s.add(r.name, "run", c)
	// runc run removes the container itself; whatever remains goes.
	_, _ = r.invoke(nil, "delete", "--force", id)
	b.track(r, id, false)

	// every command on its own, on a sleeping container
	id = "bench-sleep"
	pidFile := b.pidFile(r)
	if bundle, err = b.bundle(r, id, []string{"/bin/sleep", "3600"}, nil); err != nil {
		return err
	}
	os.Remove(pidFile)
	b.track(r, id, true)
	steps := []struct {
		row  string
		args []string
	}{
		{"create", []string{"create", "--bundle", bundle, "--pid-file", pidFile, id}},
		{"state", []string{"state", id}},
		{"start", []string{"start", id}},
		{"exec", []string{"exec", id, "/bin/true"}},
		{"kill", []string{"kill", id, "KILL"}},
	}
	for _, st := range steps {
		c, err := r.invoke(nil, st.args...)
		if err != nil {
			return err
		}
		s.add(r.name, st.row, c)
	}
	pid, err := readPid(pidFile)
	if err != nil {
		return err
	}
	if err := waitExit(pid); err != nil {
		return err
	}
	if c, err = r.invoke(nil, "delete", id); err != nil {
		return err
	}
	s.add(r.name, "delete", c)
	b.track(r, id, false)
	return nil
}

// updateZone is the zone the update-delay test creates by annotation.
const updateZone = "bench-update"

// probe runs the in-container probe outside any zone (runc) and inside
// rauha zones: privileged (almost nothing to enforce) and a policy that
// gives every backend something to check on each operation.
func (b *bench) probe(ctx context.Context, res *results) error {
	policy := filepath.Join(b.cfg.work, "probe.toml")
	if err := os.WriteFile(policy, []byte(probePolicy), 0o644); err != nil {
		return err
	}
	type variant struct {
		name string
		r    *runtime
		ann  map[string]string
	}
	vs := []variant{}
	if rc := b.runcs(); len(rc) > 0 {
		vs = append(vs, variant{"outside (" + rc[0].name + ")", rc[0], nil})
	}
	vs = append(vs,
		variant{"rauha zone privileged", b.rt("rauha-privileged"), nil},
		variant{"rauha zone enforcing", b.rt("rauha"), map[string]string{"org.rauha.policy": policy}},
	)
	per := map[string]map[string][]float64{} // variant -> op -> per-run medians
	p90 := map[string]map[string][]float64{}
	for run := 0; run < b.cfg.probeRuns; run++ {
		for k := range vs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v := vs[(run+k)%len(vs)]
			out, err := b.runProbe(v.r, v.ann)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			if per[v.name] == nil {
				per[v.name], p90[v.name] = map[string][]float64{}, map[string][]float64{}
			}
			for _, o := range out {
				per[v.name][o.Op] = append(per[v.name][o.Op], o.MedianNs)
				p90[v.name][o.Op] = append(p90[v.name][o.Op], o.P90Ns)
			}
		}
	}
	for _, v := range vs {
		for _, op := range []string{"open+close", "connect", "fork+exec", "signal"} {
			res.Probe = append(res.Probe, probeRow{
				Variant: v.name, Op: op, Runs: len(per[v.name][op]),
				MedianNs: median(per[v.name][op]), P90Ns: median(p90[v.name][op]),
			})
		}
	}
	return nil
}

// probePolicy: read everywhere, write only /tmp and the usual devices,
// loopback egress only, no capabilities; every probed operation is checked.
const probePolicy = `[zone]
mode = "enforce"
admission = "audit"
[capabilities]
allowed = []
[filesystem]
writable_paths = ["/tmp", "/dev/null", "/dev/zero", "/dev/full", "/dev/pts", "/dev/shm", "/dev/tty"]
[network]
allowed_egress = ["127.0.0.0/8"]
`

func (b *bench) runProbe(r *runtime, ann map[string]string) ([]probeResult, error) {
	id := "bench-probe"
	bundle, err := b.bundle(r, id, []string{"/rauhabench", "probe", strconv.Itoa(b.cfg.probeN)}, ann)
	if err != nil {
		return nil, err
	}
	outPath := filepath.Join(b.cfg.work, "probe.out")
	out, err := os.Create(outPath)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	b.track(r, id, true)
	_, err = r.invoke(out, "run", "--bundle", bundle, id)
	_, _ = r.invoke(nil, "delete", "--force", id)
	b.track(r, id, false)
	data, _ := os.ReadFile(outPath)
	if err != nil {
		return nil, fmt.Errorf("%w (probe output: %s)", err, strings.TrimSpace(string(data)))
	}
	var pr []probeResult
	if err := jsonUnmarshal(data, &pr); err != nil {
		return nil, fmt.Errorf("probe output %q: %w", data, err)
	}
	return pr, nil
}

// updateDelay: a container in a zone that allows egress to 192.0.2.0/24
// connects there in a loop; `rauha zone update` takes that away; the delay is from the start of
// the update command to the first refused connect.
func (b *bench) updateDelay(ctx context.Context, res *results) error {
	r := b.rt("rauha")
	allow := filepath.Join(b.cfg.work, "update-allow.toml")
	deny := filepath.Join(b.cfg.work, "update-deny.toml")
	allowPolicy := strings.Replace(probePolicy, `["127.0.0.0/8"]`, `["192.0.2.0/24"]`, 1)
	if err := os.WriteFile(allow, []byte(allowPolicy), 0o644); err != nil {
		return err
	}
	denyPolicy := strings.Replace(probePolicy, `["127.0.0.0/8"]`, `[]`, 1)
	if err := os.WriteFile(deny, []byte(denyPolicy), 0o644); err != nil {
		return err
	}
	if _, err := r.invoke(nil, "zone", "create", updateZone, "--policy", allow); err != nil {
		return err
	}
	ann := map[string]string{"org.rauha.zone": updateZone}
	var delays, cmds []time.Duration
	for i := 0; i < b.cfg.updateRuns; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if i > 0 {
			if _, err := r.invoke(nil, "zone", "update", updateZone, "--policy", allow); err != nil {
				return err
			}
		}
		d, c, err := b.updateSample(r, ann, deny)
		if err != nil {
			return err
		}
		delays = append(delays, d)
		cmds = append(cmds, c)
	}
	res.Update = []row{
		summarize("rauha", "update→first denied connect", delays, 0),
		summarize("rauha", "zone update command", cmds, 0),
	}
	return nil
}

func (b *bench) updateSample(r *runtime, ann map[string]string, deny string) (delay, cmd time.Duration, err error) {
	id := "bench-update"
	bundle, err := b.bundle(r, id, []string{"/rauhabench", "watch"}, ann)
	if err != nil {
		return 0, 0, err
	}
	outPath := filepath.Join(b.cfg.work, "watch.out")
	out, err := os.Create(outPath)
	if err != nil {
		return 0, 0, err
	}
	defer out.Close()
	pidFile := filepath.Join(b.cfg.work, "watch.pid")
	os.Remove(pidFile)
	b.track(r, id, true)
	defer func() {
		_, _ = r.invoke(nil, "delete", "--force", id)
		b.track(r, id, false)
	}()
	if _, err := r.invoke(out, "run", "-d", "--bundle", bundle, "--pid-file", pidFile, id); err != nil {
		return 0, 0, err
	}
	pid, err := readPid(pidFile)
	if err != nil {
		return 0, 0, err
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		data, _ := os.ReadFile(outPath)
		if strings.HasPrefix(string(data), "ready\n") {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("watch probe not ready: %q", data)
		}
		time.Sleep(time.Millisecond)
	}
	t0 := time.Now()
	c, err := r.invoke(nil, "zone", "update", updateZone, "--policy", deny)
	if err != nil {
		return 0, 0, err
	}
	if err := waitExit(pid); err != nil {
		return 0, 0, fmt.Errorf("the zone update never reached the container: %w", err)
	}
	data, _ := os.ReadFile(outPath)
	lines := strings.Fields(string(data))
	if len(lines) != 2 {
		return 0, 0, fmt.Errorf("watch probe output %q", data)
	}
	ns, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("watch probe output %q: %w", data, err)
	}
	return time.Unix(0, ns).Sub(t0), c.dur, nil
}
