package main

import (
	"strings"
	"testing"
)

// The scale target is the wall-time ratio of rauha's create at the highest
// level to create at 1; its detail gives rauha's CPU-time ratio and the
// baseline runc's ratios, measured at the same levels.
func TestEvaluateScaleTarget(t *testing.T) {
	r := &results{
		Runtimes: []runtimeInfo{{Name: "rauha"}, {Name: "runc-1.1.5"}},
		Scale: []row{
			{Runtime: "rauha", Row: "create", Live: 1, MedianMs: 20, CPUMedianMs: 10},
			{Runtime: "rauha", Row: "create", Live: 500, MedianMs: 30, CPUMedianMs: 11},
			{Runtime: "runc-1.1.5", Row: "create", Live: 1, MedianMs: 20, CPUMedianMs: 10},
			{Runtime: "runc-1.1.5", Row: "create", Live: 500, MedianMs: 25, CPUMedianMs: 12},
			{Runtime: "rauha", Row: "list", Live: 500, MedianMs: 40},
		},
	}
	r.evaluate()
	var got *target
	for i := range r.Targets {
		if strings.HasPrefix(r.Targets[i].Name, "create at 500 live") {
			got = &r.Targets[i]
		}
	}
	if got == nil {
		t.Fatalf("no scale target in %+v", r.Targets)
	}
	if got.Value != 1.5 || got.Met {
		t.Errorf("value %v met %v, want 1.5 and not met", got.Value, got.Met)
	}
	if want := "CPU time 1.10x; runc-1.1.5: wall 1.25x, CPU time 1.20x"; got.Detail != want {
		t.Errorf("detail %q, want %q", got.Detail, want)
	}
}

// The network targets compare each round's egress-zone rate with the same
// round's rate outside a zone; they are met at 0.95 or more.
func TestEvaluateNetTargets(t *testing.T) {
	vs := []string{"runc-1.1.5 (outside a zone)", "rauha, zone without egress rules", "rauha, zone with 8 egress rules"}
	rates := [][]float64{{100, 200, 1000}, {99, 198, 990}, {90, 196, 980}}
	r := &results{Runtimes: []runtimeInfo{{Name: "runc-1.1.5"}, {Name: "rauha"}}}
	for i, v := range vs {
		for _, m := range netMetrics {
			r.Net = append(r.Net, netRow{Variant: v, Metric: m.name, Unit: m.unit, Runs: 3, Rates: rates[i]})
		}
	}
	r.evaluate()
	if len(r.Targets) != len(netMetrics) {
		t.Fatalf("targets %+v, want one per metric", r.Targets)
	}
	for _, got := range r.Targets {
		// round ratios 0.90, 0.98, 0.98: the median is 0.98
		if got.Value != 0.98 || !got.Met || !got.AtLeast {
			t.Errorf("%s: value %v met %v at least %v, want 0.98, met, at least", got.Name, got.Value, got.Met, got.AtLeast)
		}
	}
}

// Over six turns, each of three variants runs right before each other one
// equally often.
func TestNetOrderBalanced(t *testing.T) {
	before := map[[2]int]int{}
	for turn := 0; turn < 6; turn++ {
		o := netOrder(turn, 3)
		for k := 0; k+1 < len(o); k++ {
			before[[2]int{o[k], o[k+1]}]++
		}
	}
	if len(before) != 6 {
		t.Fatalf("adjacent pairs %v, want all 6", before)
	}
	for p, n := range before {
		if n != 2 {
			t.Errorf("%v adjacent %d times, want 2", p, n)
		}
	}
}

// The zone-to-zone targets: bulk and one-connection request rates of the
// zones over the same round's rates without zones, met at 0.95 or more;
// the printed table has one line per metric.
func TestEvaluateZoneNetTargets(t *testing.T) {
	vs := []string{"runc-1.1.5 (bench bridges, no zone)", "rauha, two bridged zones allowing each other"}
	rates := [][]float64{{100, 200, 1000}, {90, 196, 980}}
	r := &results{Runtimes: []runtimeInfo{{Name: "runc-1.1.5"}, {Name: "rauha"}}}
	for i, v := range vs {
		for _, m := range netMetrics {
			r.ZoneNet = append(r.ZoneNet, netRow{Variant: v, Metric: m.name, Unit: m.unit, Runs: 3, Rates: rates[i]})
		}
	}
	r.evaluate()
	if len(r.Targets) != 2 {
		t.Fatalf("targets %+v, want bulk and one-connection requests", r.Targets)
	}
	for _, got := range r.Targets {
		if got.Value != 0.98 || !got.Met || !got.AtLeast {
			t.Errorf("%s: value %v met %v at least %v, want 0.98, met, at least", got.Name, got.Value, got.Met, got.AtLeast)
		}
	}
	var out strings.Builder
	r.print(&out)
	if n := strings.Count(out.String(), "| **0.980** |"); n != len(netMetrics) {
		t.Errorf("%d zone-to-zone lines with ratio 0.980, want %d:\n%s", n, len(netMetrics), out.String())
	}
}

// The cost targets come from the cost part: the median of the alternated
// pairs' differences against the pair's limit; a pair without a limit (this
// build against the base build) is reported but is no target.
func TestEvaluateCostTargets(t *testing.T) {
	r := &results{Cost: []costRow{
		{Name: "zone with 8 egress rules", Subject: "rauha-egress", Reference: "runc-1.5.0", N: 100, DiffMs: 2.5, DiffLowMs: 1.9, DiffHighMs: 3.2, LimitMs: 3},
		{Name: "bridged, a zone per container", Subject: "rauha-bridged", Reference: "rauha-isolated", N: 100, DiffMs: 5.5, LimitMs: 5},
		{Name: "this build against the base build", Subject: "rauha-egress", Reference: "base-rauha-egress", N: 100, DiffMs: -1},
	}}
	r.evaluate()
	if len(r.Targets) != 2 {
		t.Fatalf("targets %+v, want the two with a limit", r.Targets)
	}
	if got := r.Targets[0]; got.Value != 2.5 || !got.Met || !strings.Contains(got.Detail, "95% interval +1.9..+3.2 ms") {
		t.Errorf("egress target %+v, want 2.5 ms, met, with its interval", got)
	}
	if got := r.Targets[1]; got.Value != 5.5 || got.Met {
		t.Errorf("bridged target %+v, want 5.5 ms, not met", got)
	}
}

// The interval of the median holds the middle order statistics: for 100
// values k = floor(50 - 9.8) = 40, so the 41st and 60th smallest.
func TestMedianInterval(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(99 - i) // unsorted on purpose
	}
	if lo, hi := medianInterval(v); lo != 40 || hi != 59 {
		t.Errorf("interval %v..%v, want 40..59", lo, hi)
	}
	if lo, hi := medianInterval([]float64{3, 1, 2}); lo != 1 || hi != 3 {
		t.Errorf("three values: %v..%v, want their range", lo, hi)
	}
}
