package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The network part: the same busybox container, in a network namespace of
// the bench, sends to a listener in a second namespace of the bench (a veth
// pair between them; scripts/bench.sh makes both and starts the listener),
// three ways in each round: under runc (outside any zone), in a rauha zone
// without egress rules (preset privileged) and in a rauha zone whose
// allowed_egress rules let the listener in (egressPolicy). Every packet a
// member sends passes rauha's cgroup_skb/egress program, and every connect
// its cgroup/connect4 program, so the bulk send measures the per-packet
// cost and the connection loop the per-connection one.

// Net metrics, in table order: name and unit.
var netMetrics = []struct{ name, unit, per, exchange string }{
	{"bulk send", "MB/s", "MB", "bulk"},
	{"requests, one connection", "req/s", "request", "requests"},
	{"requests, new connection each", "conn/s", "connection", "connections"},
}

// egressRules is the number of rules egressPolicy lists.
const egressRules = 8

// egressPolicy differs from preset privileged (enforce, admission audit,
// nothing else) only in its allowed_egress rules: several, IPv4 and IPv6,
// with and without ports, one of them a /8 above the listener, so the
// lookup walks a real trie and not a single entry. listener is host:port.
func egressPolicy(listener string) string {
	return fmt.Sprintf(`[zone]
mode = "enforce"
admission = "audit"
[network]
allowed_egress = [
  "192.0.2.0/24:443",
  "198.51.100.7",
  "203.0.113.0/25:53",
  "10.0.0.0/8:8443",
  "172.16.0.0/12:5432",
  "[2001:db8::/32]:443",
  "[fd00::/8]:53",
  "%s",
]
`, listener)
}

// deniedAddr is the listener's host with the next port: no rule allows it,
// so a connect there fails with EPERM in the egress zone and with
// ECONNREFUSED elsewhere. The client tries it last, which proves the rules
// were in force while it measured.
func deniedAddr(listener string) (string, error) {
	host, port, err := net.SplitHostPort(listener)
	if err != nil {
		return "", fmt.Errorf("-net-addr %q: %w", listener, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65534 {
		return "", fmt.Errorf("-net-addr %q: bad port", listener)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

type netVariant struct {
	name   string
	r      *runtime
	denied string // the outcome of the connect to deniedAddr this variant must see
}

// netVariants: the baseline runc, and the two rauha zones.
func (b *bench) netVariants() []netVariant {
	var vs []netVariant
	if rc := b.runcs(); len(rc) > 0 {
		vs = append(vs, netVariant{rc[0].name + " (outside a zone)", rc[0], "ECONNREFUSED"})
	}
	return append(vs,
		netVariant{"rauha, zone without egress rules", b.rt("rauha-privileged"), "ECONNREFUSED"},
		netVariant{fmt.Sprintf("rauha, zone with %d egress rules", egressRules), b.rt("rauha-egress"), "EPERM"},
	)
}

// netTest keeps one sleeping container per variant and execs the client
// into each in turn, one exchange at a time: the three variants' figures
// of an exchange are taken within a second of each other, so a burst of
// other load on the host falls on all of them, and each round yields
// paired ratios. The order changes every exchange and round (netOrder).
func (b *bench) netTest(ctx context.Context, res *results) error {
	if b.cfg.netNetns == "" {
		// scripts/bench.sh makes the namespaces and the listener
		fmt.Fprintln(os.Stderr, "bench: net: skipped, no -net-netns")
		return nil
	}
	denied, err := deniedAddr(b.cfg.netAddr)
	if err != nil {
		return err
	}
	vs := b.netVariants()
	for _, v := range vs {
		if err := b.startNetContainer(v.r); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	defer func() {
		for _, v := range vs {
			_, _ = v.r.invoke(nil, "delete", "--force", netID)
			b.track(v.r, netID, false)
		}
	}()
	counts := []int{b.cfg.netBulkMiB, b.cfg.netRequests, b.cfg.netConns}
	// variant -> metric -> one value per round
	rate, cpu := map[string][][]float64{}, map[string][][]float64{}
	for _, v := range vs {
		rate[v.name] = make([][]float64, len(netMetrics))
		cpu[v.name] = make([][]float64, len(netMetrics))
	}
	const warmup = 1
	for round := 0; round < warmup+b.cfg.netRounds; round++ {
		for i, m := range netMetrics {
			for k := range vs {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				v := vs[netOrder(round+i, len(vs))[k]]
				nr, err := b.netExchange(v.r, m.exchange, counts[i], denied)
				if err != nil {
					return fmt.Errorf("%s: %w", v.name, err)
				}
				if nr.DeniedErr != v.denied {
					return fmt.Errorf("%s: the connect to %s, which no rule allows, ended in %s, want %s", v.name, denied, nr.DeniedErr, v.denied)
				}
				if round >= warmup {
					rate[v.name][i] = append(rate[v.name][i], nr.Rate)
					cpu[v.name][i] = append(cpu[v.name][i], nr.CPU)
				}
			}
		}
	}
	// The programs' own cost: measured last, so the statistics never
	// slow down the rounds.
	if res.NetProg, err = b.netProgCost(vs, counts, denied); err != nil {
		return fmt.Errorf("BPF program cost: %w", err)
	}
	for _, v := range vs {
		res.Net = append(res.Net, netRows(v.name, rate[v.name], cpu[v.name])...)
	}
	return nil
}

// netRows are the table rows of one variant: the rates and CPU times of
// each of netMetrics, over the rounds.
func netRows(variant string, rate, cpu [][]float64) []netRow {
	var rows []netRow
	for i, m := range netMetrics {
		xs := rate[i]
		rows = append(rows, netRow{Variant: variant, Metric: m.name, Unit: m.unit, Runs: len(xs),
			Median: median(xs), Min: minOf(xs), Max: maxOf(xs), CPUus: median(cpu[i]),
			Rates: xs, CPUs: cpu[i]})
	}
	return rows
}

// netOrder is the order of n variants in turn t: every permutation in
// turn, so each variant runs as often before as after each other one (a
// rotation alone would always run B right after A).
func netOrder(t, n int) []int {
	perms := [][]int{{}}
	for len(perms[0]) < n {
		var next [][]int
		for _, p := range perms {
			for v := 0; v < n; v++ {
				if !slices.Contains(p, v) {
					next = append(next, append(slices.Clone(p), v))
				}
			}
		}
		perms = next
	}
	return perms[t%len(perms)]
}

// netID is the network part's container, one per runtime.
const netID = "bench-net"

// startNetContainer runs a sleeping container in the client's network
// namespace.
func (b *bench) startNetContainer(r *runtime) error {
	joinNetns := func(cfg map[string]any) {
		linux := cfg["linux"].(map[string]any)
		nss, _ := linux["namespaces"].([]any)
		for _, ns := range nss {
			if m := ns.(map[string]any); m["type"] == "network" {
				m["path"] = b.cfg.netNetns
			}
		}
	}
	bundle, err := b.bundle(r, netID, []string{"/bin/sleep", "3600"}, nil, joinNetns)
	if err != nil {
		return err
	}
	b.track(r, netID, true)
	_, err = r.invoke(nil, "run", "-d", "--bundle", bundle, netID)
	return err
}

// netExchange execs the client into r's container for one exchange.
func (b *bench) netExchange(r *runtime, exchange string, count int, denied string) (netResult, error) {
	outPath := filepath.Join(b.cfg.work, "net.out")
	out, err := os.Create(outPath)
	if err != nil {
		return netResult{}, err
	}
	defer out.Close()
	_, err = r.invoke(out, "exec", netID, "/rauhabench", "netclient", b.cfg.netAddr, exchange, strconv.Itoa(count), denied)
	data, _ := os.ReadFile(outPath)
	if err != nil {
		return netResult{}, fmt.Errorf("%w (client output: %s)", err, strings.TrimSpace(string(data)))
	}
	var nr netResult
	if err := jsonUnmarshal(data, &nr); err != nil {
		return netResult{}, fmt.Errorf("client output %q: %w", data, err)
	}
	return nr, nil
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}
