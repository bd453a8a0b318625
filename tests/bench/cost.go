package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// costRow is what one runtime (the subject) adds to create+start+wait+delete
// against another (the reference), from cycles of the two alternated one by
// one.
type costRow struct {
	Name      string  `json:"name"`
	Subject   string  `json:"subject"`
	Reference string  `json:"reference"`
	N         int     `json:"n"` // pairs
	SubjectMs float64 `json:"subject_median_ms"`
	RefMs     float64 `json:"reference_median_ms"`
	// DiffMs is the median of the pairs' differences (subject - reference);
	// DiffLowMs..DiffHighMs is its 95% confidence interval.
	DiffMs     float64 `json:"diff_median_ms"`
	DiffLowMs  float64 `json:"diff_low_ms"`
	DiffHighMs float64 `json:"diff_high_ms"`
	CPUDiffMs  float64 `json:"cpu_diff_median_ms"` // runtime CPU time, median of the pairs' differences
	// StepDiffMs: median of the pairs' differences of each step of the
	// cycle (create, start, wait, delete), to see where a difference is.
	StepDiffMs map[string]float64 `json:"step_diff_median_ms"`
	LimitMs    float64            `json:"limit_ms,omitempty"` // 0: no target
}

// costPair names a comparison of the cost part.
type costPair struct {
	name, subject, ref string
	limitMs            float64
}

// costPairs are the comparisons the targets of the zone issues are stated
// in, those whose runtimes this run has. ref is the runc on rauha's own
// libcontainer (outside any zone).
func (b *bench) costPairs(ref string) []costPair {
	ps := []costPair{
		{fmt.Sprintf("zone with %d egress rules", egressRules), "rauha-egress", ref, 3},
		{"enforcement (strict zone)", "rauha-strict", "rauha-privileged", 3},
		{"bridged, a zone per container", "rauha-bridged", "rauha-isolated", 5},
		{"bridged, one named zone", "rauha-bridged-zone", "rauha-isolated", 5},
		{"this build against the base build (egress zone)", "rauha-egress", "base-rauha-egress", 0},
	}
	var out []costPair
	for _, p := range ps {
		if b.rt(p.subject) != nil && b.rt(p.ref) != nil {
			out = append(out, p)
		}
	}
	return out
}

// cost measures each pair by alternating its two runtimes cycle by cycle,
// in the order AB BA AB ..., so that load that comes and goes on the host,
// and a drift of the kernel's state over the run, fall on both alike. The
// lifecycle part's medians come from runtimes sampled seconds apart and
// differ by several milliseconds from run to run; a difference of two
// cycles run back to back does not carry that.
func (b *bench) cost(ctx context.Context, res *results) error {
	ref := res.sameLibcontainer()
	for _, p := range b.costPairs(ref) {
		fmt.Fprintf(os.Stderr, "bench: cost: %s (%s - %s)\n", p.name, p.subject, p.ref)
		rts := [2]*runtime{b.rt(p.ref), b.rt(p.subject)}
		// Each runtime's samples, pair by pair: wall time, CPU time and
		// the wall time of each step.
		var wall, cpu [2][]float64
		var steps [2][len(cycleSteps)][]float64
		const warmup = 2
		for i := 0; i < warmup+b.cfg.costPairs; i++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			order := []int{0, 1} // 0: the reference, 1: the subject
			if i%2 == 1 {
				order = []int{1, 0}
			}
			var cs [2]cycleTimes
			for _, k := range order {
				c, err := b.cycle(rts[k])
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				cs[k] = c
			}
			if i < warmup {
				continue
			}
			for k, c := range cs {
				wall[k], cpu[k] = append(wall[k], ms(c.dur)), append(cpu[k], ms(c.cpu))
				for j, d := range c.steps {
					steps[k][j] = append(steps[k][j], ms(d))
				}
			}
		}
		stepDiff := map[string]float64{}
		for j, step := range cycleSteps {
			stepDiff[step] = round(pairedDiff(steps[1][j], steps[0][j]))
		}
		diff := differences(wall[1], wall[0])
		lo, hi := medianInterval(diff)
		res.Cost = append(res.Cost, costRow{
			Name: p.name, Subject: p.subject, Reference: p.ref, N: len(diff),
			SubjectMs: round(median(wall[1])), RefMs: round(median(wall[0])),
			DiffMs: round(median(diff)), DiffLowMs: round(lo), DiffHighMs: round(hi),
			CPUDiffMs: round(pairedDiff(cpu[1], cpu[0])), StepDiffMs: stepDiff, LimitMs: p.limitMs,
		})
	}
	return nil
}

// pidFile is where runtime r's containers of the lifecycle and cost parts
// write their init's pid.
func (b *bench) pidFile(r *runtime) string { return filepath.Join(b.cfg.work, r.name+".pid") }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// medianInterval is a distribution-free 95% confidence interval of the
// median of v: the order statistics k and n-1-k, with k from the normal
// approximation of the binomial (n/2 - 0.98 sqrt(n)); v shorter than 8
// gives its range.
func medianInterval(v []float64) (lo, hi float64) {
	n := len(v)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	k := max(0, int(math.Floor(float64(n)/2-0.98*math.Sqrt(float64(n)))))
	return s[k], s[n-1-k]
}

// cycleSteps are the steps of a cycle, in order.
var cycleSteps = [...]string{"create", "start", "wait", "delete"}

// cycleTimes is one cycle: its wall time (reading the pid file excluded)
// and the CPU time of its three runtime calls, and the wall time of each
// step.
type cycleTimes struct {
	call
	steps [len(cycleSteps)]time.Duration
}

// cycle times create + start + wait for exit + delete of a container
// running true.
func (b *bench) cycle(r *runtime) (cycleTimes, error) {
	var t cycleTimes
	id := "bench-cycle"
	bundle, err := b.bundle(r, id, []string{"/bin/true"}, nil)
	if err != nil {
		return t, err
	}
	pidFile := b.pidFile(r)
	os.Remove(pidFile)
	b.track(r, id, true)
	c, err := r.invoke(nil, "create", "--bundle", bundle, "--pid-file", pidFile, id)
	if err != nil {
		return t, err
	}
	t.dur, t.cpu, t.steps[0] = c.dur, c.cpu, c.dur
	pid, err := readPid(pidFile)
	if err != nil {
		return t, err
	}
	t0 := time.Now()
	if c, err = r.invoke(nil, "start", id); err != nil {
		return t, err
	}
	t.cpu, t.steps[1] = t.cpu+c.cpu, c.dur
	t1 := time.Now()
	if err := waitExit(pid); err != nil {
		return t, err
	}
	t.steps[2] = time.Since(t1)
	if c, err = r.invoke(nil, "delete", id); err != nil {
		return t, err
	}
	b.track(r, id, false)
	t.cpu, t.steps[3] = t.cpu+c.cpu, c.dur
	t.dur += time.Since(t0)
	return t, nil
}
