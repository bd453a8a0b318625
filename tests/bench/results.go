package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rauha-runtime/rauha/bpf"
)

const noisyNote = "This machine is shared and noisy (2 CPUs, other sessions running): absolute times vary from run to run; only ratios between runtimes measured in the same, interleaved run count. Every runtime binary was evicted from the page cache before the run, so that none starts from the large folios a fresh build leaves (scripts/bench.sh)."

type runtimeInfo struct {
	Name    string `json:"name"`
	Bin     string `json:"bin"`
	Version string `json:"version"`
}

// row is one command's figures for one runtime.
type row struct {
	Runtime  string  `json:"runtime"`
	Row      string  `json:"row"`
	Live     int     `json:"live,omitempty"` // live containers (scale rows)
	N        int     `json:"n"`
	MedianMs float64 `json:"median_ms"`
	P90Ms    float64 `json:"p90_ms"`
	PeakRSS  int64   `json:"peak_rss_kib,omitempty"`
	// CPU time (user + system) of the runtime call, median: much less
	// sensitive to other load than wall time.
	CPUMedianMs float64 `json:"cpu_median_ms,omitempty"`
}

type probeRow struct {
	Variant  string  `json:"variant"`
	Op       string  `json:"op"`
	Runs     int     `json:"runs"`
	MedianNs float64 `json:"median_ns"` // median over runs of each run's median
	P90Ns    float64 `json:"p90_ns"`
}

// netRow is one variant's figure for one metric of the network part.
type netRow struct {
	Variant string  `json:"variant"`
	Metric  string  `json:"metric"`
	Unit    string  `json:"unit"`
	Runs    int     `json:"runs"`
	Median  float64 `json:"median"` // of one value per round (container)
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	// Median CPU time of the client per unit (MB, request, connection), µs.
	CPUus float64   `json:"cpu_us_median"`
	Rates []float64 `json:"rates"`  // per round
	CPUs  []float64 `json:"cpu_us"` // per round
}

type target struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Limit   float64 `json:"limit"`
	AtLeast bool    `json:"at_least,omitempty"` // the value must reach the limit, not stay under it
	Unit    string  `json:"unit"`
	Met     bool    `json:"met"`
	Detail  string  `json:"detail,omitempty"`
}

type results struct {
	Started   string        `json:"started"`
	Host      string        `json:"host"`
	Note      string        `json:"note"`
	LoadAvg   string        `json:"loadavg_end"`
	Runtimes  []runtimeInfo `json:"runtimes"`
	Lifecycle []row         `json:"lifecycle,omitempty"`
	Cost      []costRow     `json:"cost,omitempty"`
	Probe     []probeRow    `json:"probe,omitempty"`
	Update    []row         `json:"update,omitempty"`
	Net       []netRow      `json:"net,omitempty"`
	NetProg   []netProgRow  `json:"net_programs,omitempty"`
	ZoneNet   []netRow      `json:"zone_net,omitempty"`
	Scale     []row         `json:"scale,omitempty"`
	Targets   []target      `json:"targets"`
	Errors    []string      `json:"errors,omitempty"`
}

func summarize(rt, name string, ds []time.Duration, rss int64) row {
	v := make([]float64, len(ds))
	for i, d := range ds {
		v[i] = float64(d.Microseconds()) / 1000
	}
	sort.Float64s(v)
	return row{Runtime: rt, Row: name, N: len(v), MedianMs: quantile(v, 0.5), P90Ms: quantile(v, 0.9), PeakRSS: rss}
}

// quantile of sorted v: the median interpolates, p90 is the nearest rank.
func quantile(v []float64, q float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	if q == 0.5 {
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	k := int(math.Ceil(q*float64(n))) - 1
	return v[max(0, min(k, n-1))]
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return quantile(s, 0.5)
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func hostInfo() string {
	var u [3]string
	for i, f := range []string{"/proc/sys/kernel/osrelease", "/proc/sys/kernel/hostname", "/proc/loadavg"} {
		data, _ := os.ReadFile(f)
		u[i] = strings.TrimSpace(string(data))
	}
	return fmt.Sprintf("kernel %s, loadavg at start %s, %s", u[0], u[2], foreignPins())
}

// foreignPins counts the rauha pin directories on the host before the bench
// made any. Each one keeps its sys_exit observer attached, and that costs
// every syscall of every process on the host, runc's containers included
// (45 ns on getppid, 130 ns on open+close with one idle root, here): the
// "outside" rows are only outside rauha when this is 0.
func foreignPins() string {
	n := len(bpf.PinDirs())
	return fmt.Sprintf("rauha pin directories at start: %d", n)
}

func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(data))
}

func (r *results) find(rows []row, rt, name string, live int) (row, bool) {
	for _, x := range rows {
		if x.Runtime == rt && x.Row == name && x.Live == live {
			return x, true
		}
	}
	return row{}, false
}

func (r *results) probeFind(variantPrefix, op string) (probeRow, bool) {
	for _, p := range r.Probe {
		if strings.HasPrefix(p.Variant, variantPrefix) && p.Op == op {
			return p, true
		}
	}
	return probeRow{}, false
}

// baseline is the first runc in the run (runc 1.1.5 by default): the
// targets of issue 6 are stated against it.
func (r *results) baseline() string {
	for _, rt := range r.Runtimes {
		if !strings.HasPrefix(rt.Name, "rauha") {
			return rt.Name
		}
	}
	return ""
}

// evaluate checks the targets of issue 6 against this run's figures.
func (r *results) evaluate() {
	base := r.baseline()
	add := func(name string, value, limit float64, unit, detail string) {
		r.Targets = append(r.Targets, target{Name: name, Value: round(value), Limit: limit, Unit: unit,
			Met: !math.IsNaN(value) && value <= limit, Detail: detail})
	}
	_, ranRauha := r.find(r.Lifecycle, "rauha", "cycle", 0)
	_, ranBase := r.find(r.Lifecycle, base, "cycle", 0)
	if ranRauha && ranBase { // not so under -lifecycle-only
		a, _ := r.find(r.Lifecycle, "rauha", "cycle", 0)
		b, _ := r.find(r.Lifecycle, base, "cycle", 0)
		add("create+start+wait+delete median rauha/"+base, a.MedianMs/b.MedianMs, 0.8, "ratio", "")
		var slow, fat []string
		worst, worstRSS := 0.0, 0.0
		for _, name := range lifecycleRows {
			a, _ := r.find(r.Lifecycle, "rauha", name, 0)
			b, _ := r.find(r.Lifecycle, base, name, 0)
			q := a.MedianMs / b.MedianMs
			worst = math.Max(worst, q)
			if q > 1 {
				slow = append(slow, fmt.Sprintf("%s %.2f", name, q))
			}
			if a.PeakRSS > 0 && b.PeakRSS > 0 {
				qr := float64(a.PeakRSS) / float64(b.PeakRSS)
				worstRSS = math.Max(worstRSS, qr)
				if qr > 1 {
					fat = append(fat, fmt.Sprintf("%s %.2f", name, qr))
				}
			}
		}
		add("no row slower than "+base+" (worst median ratio)", worst, 1, "ratio", strings.Join(slow, ", "))
		add("peak RSS of every command <= "+base+" (worst ratio)", worstRSS, 1, "ratio", strings.Join(fat, ", "))
	}
	for _, c := range r.Cost {
		if c.LimitMs > 0 {
			add(fmt.Sprintf("%s adds to create+start+wait+delete (%s - %s, median of %d alternated pairs)", c.Name, c.Subject, c.Reference, c.N),
				c.DiffMs, c.LimitMs, "ms", fmt.Sprintf("95%% interval %+.1f..%+.1f ms; CPU time %+.1f ms", c.DiffLowMs, c.DiffHighMs, c.CPUDiffMs))
		}
	}
	if vs := r.netVariants(); len(vs) == 3 {
		for _, m := range netMetrics {
			out, _ := r.netFind(vs[0], m.name)
			none, _ := r.netFind(vs[1], m.name)
			eg, _ := r.netFind(vs[2], m.name)
			q := pairedRatio(eg.Rates, out.Rates)
			r.Targets = append(r.Targets, target{
				Name:  fmt.Sprintf("%s (%s) in the egress zone / %s", m.name, m.unit, vs[0]),
				Value: round(q), Limit: 0.95, AtLeast: true, Unit: "ratio", Met: q >= 0.95,
				Detail: fmt.Sprintf("egress zone / zone without egress rules %.3f; zone without egress rules / outside %.3f",
					pairedRatio(eg.Rates, none.Rates), pairedRatio(none.Rates, out.Rates)),
			})
		}
	}
	if len(r.ZoneNet) == 2*len(netMetrics) {
		for i, m := range netMetrics[:2] {
			a, z := r.ZoneNet[i], r.ZoneNet[len(netMetrics)+i]
			q := pairedRatio(z.Rates, a.Rates)
			r.Targets = append(r.Targets, target{
				Name:  fmt.Sprintf("%s (%s) between two bridged zones that allow each other / the same path without zones", m.name, m.unit),
				Value: round(q), Limit: 0.95, AtLeast: true, Unit: "ratio", Met: q >= 0.95,
			})
		}
	}
	if in, ok := r.probeFind("rauha zone enforcing", "open+close"); ok {
		if out, ok := r.probeFind("outside", "open+close"); ok {
			add("open+close inside an enforcing zone / outside", in.MedianNs/out.MedianNs, 1.10, "ratio", "")
		}
	}
	if len(r.Scale) > 0 {
		lv := 0
		for _, x := range r.Scale {
			lv = max(lv, x.Live)
		}
		c1, ok1 := r.find(r.Scale, "rauha", "create", 1)
		cN, ok2 := r.find(r.Scale, "rauha", "create", lv)
		if ok1 && ok2 {
			// The levels run minutes apart, not interleaved, so the wall
			// ratio follows the host (every create waits for the kernel's
			// cgroup-migration lock, idleBeforeCreate); CPU time and the
			// baseline's own ratio show how much of it is the runtime's.
			detail := fmt.Sprintf("CPU time %.2fx", cN.CPUMedianMs/c1.CPUMedianMs)
			b1, okb1 := r.find(r.Scale, base, "create", 1)
			bN, okbN := r.find(r.Scale, base, "create", lv)
			if okb1 && okbN {
				detail += fmt.Sprintf("; %s: wall %.2fx, CPU time %.2fx", base, bN.MedianMs/b1.MedianMs, bN.CPUMedianMs/b1.CPUMedianMs)
			}
			add(fmt.Sprintf("create at %d live / at 1 live", lv), cN.MedianMs/c1.MedianMs, 1.2, "ratio", detail)
		}
		if l, ok := r.find(r.Scale, "rauha", "list", lv); ok {
			add(fmt.Sprintf("list at %d live", lv), l.MedianMs, 100, "ms", "")
		}
	}
}

// sameLibcontainer is the runc built on rauha's libcontainer (1.5) when the
// run has it, else the baseline: "outside a zone" for the zone-cost targets.
func (r *results) sameLibcontainer() string {
	for _, rt := range r.Runtimes {
		if strings.HasPrefix(rt.Name, "runc-1.5") {
			return rt.Name
		}
	}
	return r.baseline()
}

// netVariants are the network part's variants, in run order.
func (r *results) netVariants() []string {
	var vs []string
	for _, n := range r.Net {
		if len(vs) == 0 || vs[len(vs)-1] != n.Variant {
			vs = append(vs, n.Variant)
		}
	}
	return vs
}

func (r *results) netFind(variant, metric string) (netRow, bool) {
	for _, n := range r.Net {
		if n.Variant == variant && n.Metric == metric {
			return n, true
		}
	}
	return netRow{}, false
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

func (r *results) write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func (r *results) print(w io.Writer) {
	fmt.Fprintf(w, "\n# rauha bench, %s (%s)\n", r.Started, r.Host)
	for _, rt := range r.Runtimes {
		fmt.Fprintf(w, "#   %-10s %s (%s)\n", rt.Name, rt.Version, rt.Bin)
	}
	fmt.Fprintf(w, "# NOTE: %s\n", r.Note)
	// The columns rauha is divided by: the runcs, and with -base-rauha the
	// other build's default zone (its other variants compare with this
	// build's variants of the same name, in bench.json).
	var runcs []string
	for _, rt := range r.Runtimes {
		if !strings.HasPrefix(rt.Name, "rauha") && !strings.HasPrefix(rt.Name, "base-rauha-") {
			runcs = append(runcs, rt.Name)
		}
	}
	_, ranRauha := r.find(r.Lifecycle, "rauha", "cycle", 0)
	if ranRauha {
		n := 0
		if x, ok := r.find(r.Lifecycle, "rauha", "cycle", 0); ok {
			n = x.N
		}
		fmt.Fprintf(w, "\n## Lifecycle (ms, median / p90 of %d interleaved samples; peak RSS KiB; cycle = create+start+wait+delete)\n\n", n)
		hdr := "| row |"
		sep := "|---|"
		for _, name := range append(append([]string{}, runcs...), "rauha") {
			hdr += " " + name + " |"
			sep += "---|"
		}
		for _, name := range runcs {
			hdr += " rauha/" + name + " |"
			sep += "---|"
		}
		for _, name := range runcs {
			hdr += " CPU rauha/" + name + " |"
			sep += "---|"
		}
		hdr += " peak RSS " + strings.Join(append(append([]string{}, runcs...), "rauha"), " / ") + " |"
		sep += "---|"
		fmt.Fprintln(w, hdr)
		fmt.Fprintln(w, sep)
		for _, name := range lifecycleRows {
			a, _ := r.find(r.Lifecycle, "rauha", name, 0)
			line := "| " + name + " |"
			var rss []string
			for _, rn := range runcs {
				b, _ := r.find(r.Lifecycle, rn, name, 0)
				line += fmt.Sprintf(" %.1f / %.1f |", b.MedianMs, b.P90Ms)
				rss = append(rss, rssStr(b.PeakRSS))
			}
			line += fmt.Sprintf(" %.1f / %.1f |", a.MedianMs, a.P90Ms)
			for _, rn := range runcs {
				b, _ := r.find(r.Lifecycle, rn, name, 0)
				line += fmt.Sprintf(" **%.2f** |", a.MedianMs/b.MedianMs)
			}
			for _, rn := range runcs {
				b, _ := r.find(r.Lifecycle, rn, name, 0)
				line += fmt.Sprintf(" %.2f |", a.CPUMedianMs/b.CPUMedianMs)
			}
			line += " " + strings.Join(append(rss, rssStr(a.PeakRSS)), " / ") + " |"
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "\n## Zone cost (ms, wall median / p90, and median CPU time of the runtime): the same lifecycle in a privileged zone (only signal scoping), the default (standard) zone and a strict zone\n\n")
		fmt.Fprintln(w, "| row | rauha-privileged | rauha (standard) | rauha-strict | strict - privileged (wall, CPU) |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, name := range lifecycleRows {
			p, _ := r.find(r.Lifecycle, "rauha-privileged", name, 0)
			s, _ := r.find(r.Lifecycle, "rauha", name, 0)
			x, _ := r.find(r.Lifecycle, "rauha-strict", name, 0)
			fmt.Fprintf(w, "| %s | %.1f / %.1f, cpu %.1f | %.1f / %.1f, cpu %.1f | %.1f / %.1f, cpu %.1f | %+.1f, %+.1f |\n", name,
				p.MedianMs, p.P90Ms, p.CPUMedianMs, s.MedianMs, s.P90Ms, s.CPUMedianMs, x.MedianMs, x.P90Ms, x.CPUMedianMs,
				x.MedianMs-p.MedianMs, x.CPUMedianMs-p.CPUMedianMs)
		}
	}
	if _, ok := r.find(r.Lifecycle, "rauha-egress", "cycle", 0); ok {
		ref := r.sameLibcontainer()
		fmt.Fprintf(w, "\n## Egress zone cost (ms, wall median / p90, and median CPU time of the runtime): the same lifecycle outside a zone (%s), in a zone without egress rules (privileged) and in a zone with %d egress rules\n\n", ref, egressRules)
		fmt.Fprintf(w, "| row | %s | rauha-privileged | rauha-egress | egress - %s (wall, CPU) | egress - privileged (wall, CPU) |\n", ref, ref)
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for _, name := range lifecycleRows {
			o, _ := r.find(r.Lifecycle, ref, name, 0)
			p, _ := r.find(r.Lifecycle, "rauha-privileged", name, 0)
			e, _ := r.find(r.Lifecycle, "rauha-egress", name, 0)
			fmt.Fprintf(w, "| %s | %.1f / %.1f, cpu %.1f | %.1f / %.1f, cpu %.1f | %.1f / %.1f, cpu %.1f | %+.1f, %+.1f | %+.1f, %+.1f |\n", name,
				o.MedianMs, o.P90Ms, o.CPUMedianMs, p.MedianMs, p.P90Ms, p.CPUMedianMs, e.MedianMs, e.P90Ms, e.CPUMedianMs,
				e.MedianMs-o.MedianMs, e.CPUMedianMs-o.CPUMedianMs, e.MedianMs-p.MedianMs, e.CPUMedianMs-p.CPUMedianMs)
		}
	}
	if len(r.Cost) > 0 {
		fmt.Fprintf(w, "\n## What a zone adds to create+start+wait+delete (ms; the two runtimes of a row alternated cycle by cycle, AB BA ...; difference: median of the pairs' differences, with its 95%% confidence interval)\n\n")
		fmt.Fprintln(w, "| comparison | subject | reference | pairs | subject median | reference median | difference (95% interval) | CPU time difference | create, start, wait, delete |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
		for _, c := range r.Cost {
			var steps []string
			for _, s := range cycleSteps {
				steps = append(steps, fmt.Sprintf("%+.1f", c.StepDiffMs[s]))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %d | %.1f | %.1f | **%+.1f** (%+.1f..%+.1f) | %+.1f | %s |\n", c.Name, c.Subject, c.Reference, c.N,
				c.SubjectMs, c.RefMs, c.DiffMs, c.DiffLowMs, c.DiffHighMs, c.CPUDiffMs, strings.Join(steps, ", "))
		}
	}
	if len(r.Probe) > 0 {
		fmt.Fprintf(w, "\n## Enforcement cost per operation inside the container (ns, median of per-run medians / p90)\n\n")
		var variants []string
		for _, p := range r.Probe {
			if len(variants) == 0 || variants[len(variants)-1] != p.Variant {
				variants = append(variants, p.Variant)
			}
		}
		fmt.Fprintln(w, "| op | "+strings.Join(variants, " | ")+" | enforcing/outside |")
		fmt.Fprintln(w, "|---|"+strings.Repeat("---|", len(variants)+1))
		for _, op := range []string{"open+close", "connect", "fork+exec", "signal"} {
			line := "| " + op + " |"
			for _, v := range variants {
				p, _ := r.probeFind(v, op)
				line += fmt.Sprintf(" %.0f / %.0f |", p.MedianNs, p.P90Ns)
			}
			in, _ := r.probeFind("rauha zone enforcing", op)
			out, _ := r.probeFind("outside", op)
			line += fmt.Sprintf(" **%.2f** |", in.MedianNs/out.MedianNs)
			fmt.Fprintln(w, line)
		}
	}
	if len(r.Update) > 0 {
		fmt.Fprintf(w, "\n## Policy update reaching a running container (ms)\n\n| what | n | median | p90 |\n|---|---|---|---|\n")
		for _, u := range r.Update {
			fmt.Fprintf(w, "| %s | %d | %.1f | %.1f |\n", u.Row, u.N, u.MedianMs, u.P90Ms)
		}
	}
	if vs := r.netVariants(); len(vs) > 0 {
		n := 0
		if x, ok := r.netFind(vs[0], netMetrics[0].name); ok {
			n = x.Runs
		}
		fmt.Fprintf(w, "\n## Network: a container in a network namespace of the bench to a listener in another (median of %d interleaved rounds, min-max; ratios: median of the rounds' ratios)\n\n", n)
		fmt.Fprintln(w, hdrOf(vs))
		sep := "|---|" + strings.Repeat("---|", len(vs))
		if len(vs) == 3 {
			sep += "---|---|"
		}
		fmt.Fprintln(w, sep)
		for _, m := range netMetrics {
			line := "| " + m.name + " (" + m.unit + ") |"
			for _, v := range vs {
				x, _ := r.netFind(v, m.name)
				line += fmt.Sprintf(" %.0f (%.0f-%.0f) |", x.Median, x.Min, x.Max)
			}
			if len(vs) == 3 {
				x0, _ := r.netFind(vs[0], m.name)
				x1, _ := r.netFind(vs[1], m.name)
				x2, _ := r.netFind(vs[2], m.name)
				line += fmt.Sprintf(" **%.3f** | **%.3f** |", pairedRatio(x2.Rates, x1.Rates), pairedRatio(x2.Rates, x0.Rates))
			}
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "\nThe client's CPU time (user + system, µs, median; differences: median of the rounds' differences; the egress programs run in the sender's context):\n\n")
		fmt.Fprintln(w, strings.Replace(strings.Replace(hdrOf(vs), "| metric |", "| CPU time per |", 1), "egress zone / ", "egress zone - ", 2))
		fmt.Fprintln(w, sep)
		for _, m := range netMetrics {
			line := "| " + m.per + " |"
			for _, v := range vs {
				x, _ := r.netFind(v, m.name)
				line += fmt.Sprintf(" %.2f |", x.CPUus)
			}
			if len(vs) == 3 {
				x0, _ := r.netFind(vs[0], m.name)
				x1, _ := r.netFind(vs[1], m.name)
				x2, _ := r.netFind(vs[2], m.name)
				line += fmt.Sprintf(" %+.2f | %+.2f |", pairedDiff(x2.CPUs, x1.CPUs), pairedDiff(x2.CPUs, x0.CPUs))
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(r.NetProg) > 0 {
		fmt.Fprintf(w, "\n## rauha's egress programs in the network exchanges (kernel BPF statistics, one more exchange each after the rounds; share: their time per unit / the client's CPU time per unit outside a zone)\n\n")
		fmt.Fprintln(w, "| variant | exchange | program | runs per unit | ns per run | µs per unit | share |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		vs := r.netVariants()
		for _, p := range r.NetProg {
			share := "-"
			if len(vs) > 0 {
				if out, ok := r.netFind(vs[0], p.Metric); ok && out.CPUus > 0 {
					share = fmt.Sprintf("%.1f%%", 100*p.RunsPerUnit*p.NsPerRun/1e3/out.CPUus)
				}
			}
			unit := p.Metric
			for _, m := range netMetrics {
				if m.name == p.Metric {
					unit = m.per
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.2f per %s | %.0f | %.2f | %s |\n", p.Variant, p.Metric, p.Program,
				p.RunsPerUnit, unit, p.NsPerRun, p.RunsPerUnit*p.NsPerRun/1e3, share)
		}
	}
	if len(r.ZoneNet) == 2*len(netMetrics) {
		base, zones := r.ZoneNet[0].Variant, r.ZoneNet[len(netMetrics)].Variant
		fmt.Fprintf(w, "\n## Zone to zone (median (min-max) of %d rounds, one exchange of each pair in turn; ratio: median of the rounds' ratios): a client container sends to a listener container over two bridges and the host's routing, in two bridged zones that allow each other, and under %s on two bridges of the bench\n\n", r.ZoneNet[0].Runs, base)
		fmt.Fprintf(w, "| metric | %s | %s | zones / no zone | client CPU µs per unit, no zone / zones |\n|---|---|---|---|---|\n", base, zones)
		for i, m := range netMetrics {
			a, z := r.ZoneNet[i], r.ZoneNet[len(netMetrics)+i]
			fmt.Fprintf(w, "| %s (%s) | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | **%.3f** | %.2f / %.2f |\n", m.name, m.unit,
				a.Median, a.Min, a.Max, z.Median, z.Min, z.Max, pairedRatio(z.Rates, a.Rates), a.CPUus, z.CPUus)
		}
	}
	if len(r.Scale) > 0 {
		fmt.Fprintf(w, "\n## Scale (ms, median / p90, with N sleeping containers alive; one runtime at a time, not interleaved; each create after %s without a cgroup move, so that it waits for the kernel's cgroup-migration lock at every level)\n\n", idleBeforeCreate)
		fmt.Fprintln(w, "| runtime | live | create | state | list | delete --force |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for _, x := range r.Scale {
			if x.Row != "create" {
				continue
			}
			line := fmt.Sprintf("| %s | %d |", x.Runtime, x.Live)
			for _, name := range []string{"create", "state", "list", "delete"} {
				y, _ := r.find(r.Scale, x.Runtime, name, x.Live)
				line += fmt.Sprintf(" %.1f / %.1f |", y.MedianMs, y.P90Ms)
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintf(w, "\n## Targets (issues 6 and 19)\n\n| target | value | limit | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		detail := ""
		if t.Detail != "" {
			detail = " (" + t.Detail + ")"
		}
		limit := fmt.Sprintf("%.2f", t.Limit)
		if t.AtLeast {
			limit = ">= " + limit
		}
		fmt.Fprintf(w, "| %s%s | %.3f %s | %s | %s |\n", t.Name, detail, t.Value, t.Unit, limit, met)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nERROR: %s\n", e)
	}
	fmt.Fprintf(w, "\nloadavg at end: %s\n", r.LoadAvg)
}

// pairedRatio is the median over rounds of a[i]/b[i]: the variants of a
// round ran within a second of each other, so the ratio of a round is
// little touched by load that comes and goes on the host.
func pairedRatio(a, b []float64) float64 {
	var q []float64
	for i := range min(len(a), len(b)) {
		q = append(q, a[i]/b[i])
	}
	return median(q)
}

// pairedDiff is the median over rounds of a[i]-b[i].
func pairedDiff(a, b []float64) float64 { return median(differences(a, b)) }

// differences are a[i]-b[i], round by round.
func differences(a, b []float64) []float64 {
	var d []float64
	for i := range min(len(a), len(b)) {
		d = append(d, a[i]-b[i])
	}
	return d
}

// hdrOf is the header of the network tables.
func hdrOf(vs []string) string {
	line := "| metric |"
	for _, v := range vs {
		line += " " + v + " |"
	}
	if len(vs) == 3 {
		line += " egress zone / zone without egress rules | egress zone / outside |"
	}
	return line
}

func rssStr(k int64) string {
	if k == 0 {
		return "-"
	}
	return fmt.Sprint(k)
}
