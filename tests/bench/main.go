// Command bench measures rauha against runc on this machine: the container
// lifecycle (interleaved with runc in the same run), what zone enforcement
// adds to it and to the syscalls it checks, how fast a policy update
// reaches a running container, and how the commands scale with the number
// of live containers. scripts/bench.sh builds everything and runs it
// (`make bench`); it prints a table and writes JSON.
//
// The same binary is also the in-container probe ("bench probe N",
// "bench watch", "bench netclient ...": bench.sh copies it, statically
// linked, into the bundle) and the listener of the network part ("bench
// netserve ADDR", in a network namespace bench.sh makes).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "probe":
			exitOn(runProbe(os.Args[2:]))
			return
		case "watch":
			exitOn(runWatch())
			return
		case "netserve":
			exitOn(runNetServe(os.Args[2:]))
			return
		case "netclient":
			exitOn(runNetClient(os.Args[2:]))
			return
		}
	}
	exitOn(runBench(os.Args[1:]))
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	rauha string
	// another rauha build whose lifecycle variants run beside this one's,
	// named base-rauha-*: a change measured against its parent in one run
	baseRauha   string
	runcs       []string // name=path
	policies    []string // name=policy file or preset: extra rauha lifecycle runtimes
	bundle      string   // base bundle from scripts/make-bundle.sh (config.json + rootfs)
	work        string   // per-container bundles and state roots
	cgPrefix    string
	out         string
	samples     int
	costPairs   int
	scale       []int
	scaleN      int
	probeN      int
	probeRuns   int
	updateRuns  int
	netNetns    string // network namespace (path) the network part's client joins
	netAddr     string // the listener, reachable from netNetns
	netRounds   int
	netBulkMiB  int
	netRequests int
	netConns    int
	// the zone-to-zone part: the runc pair's namespaces (client,listener),
	// its listener, and the rauha zones' subnets
	zoneNetns      string
	zoneNetAddr    string
	zoneNetSubnets []string
	only           map[string]bool // lifecycle runtimes, when not all
	skip           map[string]bool
}

func runBench(args []string) error {
	var c config
	var runcs, scale, skip, only, policies string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&c.rauha, "rauha", "./rauha", "rauha binary")
	fs.StringVar(&c.baseRauha, "base-rauha", "", "another rauha binary: its lifecycle variants run in the same run as base-rauha-* (e.g. base-rauha-privileged), to compare two builds")
	fs.StringVar(&runcs, "runc", "runc-1.1.5=/usr/sbin/runc", "comma-separated NAME=PATH of runc builds to compare with")
	fs.StringVar(&c.bundle, "bundle", "", "base busybox bundle (scripts/make-bundle.sh) whose rootfs holds /rauhabench")
	fs.StringVar(&c.work, "work", "/run/rauha-bench", "scratch directory for bundles and state roots (removed at the end)")
	fs.StringVar(&c.cgPrefix, "cgroup-prefix", "/rauha-bench", "absolute cgroup parent of every container")
	fs.StringVar(&c.out, "out", "bench.json", "JSON result file")
	fs.IntVar(&c.samples, "n", 30, "lifecycle samples per runtime")
	fs.IntVar(&c.costPairs, "cost-n", 200, "cycle pairs per comparison of the cost part")
	fs.StringVar(&scale, "scale", "1,100,500", "live-container counts for the scale test")
	fs.IntVar(&c.scaleN, "scale-n", 30, "samples per scale level")
	fs.IntVar(&c.probeN, "probe-n", 2000, "probe iterations (open and signal run 10x, fork+exec 1/10)")
	fs.IntVar(&c.probeRuns, "probe-runs", 5, "probe containers per variant")
	fs.IntVar(&c.updateRuns, "update-runs", 10, "zone update delay samples")
	fs.StringVar(&c.netNetns, "net-netns", "", "network namespace (path) for the network part's client; empty skips that part")
	fs.StringVar(&c.netAddr, "net-addr", "10.231.0.2:5201", "the network part's listener (IPv4:port), reachable from -net-netns")
	fs.IntVar(&c.netRounds, "net-rounds", 20, "network part rounds (each runs every exchange once per variant)")
	fs.IntVar(&c.netBulkMiB, "net-bulk-mib", 128, "MiB each bulk send sends")
	fs.IntVar(&c.netRequests, "net-requests", 3000, "request/answer round trips over one connection per exchange")
	fs.IntVar(&c.netConns, "net-conns", 600, "connections with one request each per exchange")
	fs.StringVar(&c.zoneNetns, "zonenet-netns", "", "CLIENT,LISTENER network namespaces (paths) of the zone-to-zone part's runc pair; empty skips that part")
	fs.StringVar(&c.zoneNetAddr, "zonenet-addr", "10.235.2.2:5201", "the zone-to-zone part's runc listener (IPv4:port, a /24 whose first address is its gateway)")
	var zoneNetSubnets string
	fs.StringVar(&zoneNetSubnets, "zonenet-subnets", "10.234.1.0/24,10.234.2.0/24", "subnets of the zone-to-zone part's two rauha zones (/24)")
	fs.StringVar(&policies, "policy", "", "comma-separated NAME=POLICY: more rauha lifecycle runtimes, rauha-NAME in a zone of its own per container with POLICY (a preset or a policy file), to attribute a zone's cost to its controls")
	fs.StringVar(&only, "lifecycle-only", "", "comma-separated runtimes the lifecycle part runs (e.g. rauha-isolated,rauha-bridged,rauha-bridged-zone); empty: all")
	fs.StringVar(&skip, "skip", "", "comma-separated parts to skip: lifecycle,cost,probe,update,net,zonenet,scale")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.bundle == "" {
		return fmt.Errorf("-bundle is required")
	}
	if !filepath.IsAbs(c.cgPrefix) {
		return fmt.Errorf("-cgroup-prefix %q must be absolute", c.cgPrefix)
	}
	c.runcs = splitList(runcs)
	c.policies = splitList(policies)
	if c.costPairs < 1 {
		return fmt.Errorf("-cost-n must be at least 1")
	}
	if c.netRounds < 1 || c.netBulkMiB < 1 || c.netRequests < 1 || c.netConns < 1 {
		return fmt.Errorf("-net-rounds, -net-bulk-mib, -net-requests and -net-conns must be at least 1")
	}
	for _, s := range splitList(scale) {
		var v int
		if _, err := fmt.Sscanf(s, "%d", &v); err != nil || v < 1 {
			return fmt.Errorf("-scale: bad count %q", s)
		}
		c.scale = append(c.scale, v)
	}
	if c.zoneNetSubnets = splitList(zoneNetSubnets); len(c.zoneNetSubnets) != 2 {
		return fmt.Errorf("-zonenet-subnets %q: want two", zoneNetSubnets)
	}
	c.only = map[string]bool{}
	for _, s := range splitList(only) {
		c.only[s] = true
	}
	c.skip = map[string]bool{}
	for _, s := range splitList(skip) {
		c.skip[s] = true
	}
	var err error
	if c.rauha, err = filepath.Abs(c.rauha); err != nil {
		return err
	}
	if c.bundle, err = filepath.Abs(c.bundle); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	b, err := newBench(c)
	if err != nil {
		return err
	}
	runErr := b.run(ctx)
	if cerr := b.cleanup(); cerr != nil {
		fmt.Fprintln(os.Stderr, "bench: cleanup:", cerr)
		if runErr == nil {
			runErr = cerr
		}
	}
	return runErr
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (b *bench) run(ctx context.Context) error {
	res := &results{
		Started: time.Now().UTC().Format(time.RFC3339),
		Host:    hostInfo(),
		Note:    noisyNote,
	}
	for _, rt := range b.runtimes {
		res.Runtimes = append(res.Runtimes, runtimeInfo{Name: rt.name, Bin: rt.bin, Version: rt.version()})
	}
	parts := []struct {
		name string
		fn   func(context.Context, *results) error
	}{
		{"lifecycle", b.lifecycle},
		{"cost", b.cost},
		{"probe", b.probe},
		{"update", b.updateDelay},
		{"net", b.netTest},
		{"zonenet", b.zoneNet},
		{"scale", b.scaleTest},
	}
	var firstErr error
	for _, p := range parts {
		if b.cfg.skip[p.name] {
			continue
		}
		if ctx.Err() != nil {
			firstErr = ctx.Err()
			break
		}
		fmt.Fprintf(os.Stderr, "bench: %s (%s)\n", p.name, time.Now().Format("15:04:05"))
		if err := p.fn(ctx, res); err != nil {
			// Keep what the other parts measure; the report says what failed.
			res.Errors = append(res.Errors, p.name+": "+err.Error())
			fmt.Fprintf(os.Stderr, "bench: %s failed: %v\n", p.name, err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	res.LoadAvg = loadavg()
	res.evaluate()
	res.print(os.Stdout)
	if err := res.write(b.cfg.out); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: JSON written to", b.cfg.out)
	return firstErr
}
