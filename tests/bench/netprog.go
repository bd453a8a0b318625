package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The wall-time rates of the network part follow the load on the host;
// what rauha's programs themselves cost does not. After the rounds, the
// bench runs each exchange once more in the two rauha containers with the
// kernel's BPF run-time statistics on (BPF_ENABLE_STATS: on while the bench
// holds the descriptor, for a few seconds; every BPF program on the host
// then pays two clock reads per run) and reads how often the egress
// programs attached to the container's cgroup ran and for how long.

// netProgRow is one program's cost in one exchange of one variant.
type netProgRow struct {
	Variant     string  `json:"variant"`
	Metric      string  `json:"metric"`
	Program     string  `json:"program"`
	RunsPerUnit float64 `json:"runs_per_unit"` // per MB, request or connection
	NsPerRun    float64 `json:"ns_per_run"`
}

// netProgAttach are the attach points whose programs judge the client's
// traffic: every packet it sends, its connects, and every packet delivered
// to it (the receive path runs in a softirq, charged to whichever task
// runs on that CPU, usually the listener that sent the packet).
var netProgAttach = []ebpf.AttachType{ebpf.AttachCGroupInetEgress, ebpf.AttachCGroupInet4Connect, ebpf.AttachCGroupInetIngress}

// unifiedRoot is the mount point of the cgroup v2 hierarchy: /sys/fs/cgroup,
// or /sys/fs/cgroup/unified on a hybrid host.
func unifiedRoot() (string, error) {
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy mounted")
}

// programStats are the run count and run time of every program effective
// at cgroup dir for the attach points above, by program name.
func programStats(dir string) (map[string]ebpf.ProgramStats, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]ebpf.ProgramStats{}
	for _, at := range netProgAttach {
		q, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: at, QueryFlags: unix.BPF_F_QUERY_EFFECTIVE})
		if err != nil {
			return nil, fmt.Errorf("query %s programs of %s: %w", at, dir, err)
		}
		for _, ap := range q.Programs {
			p, err := ebpf.NewProgramFromID(ap.ID)
			if err != nil {
				return nil, err
			}
			info, ierr := p.Info()
			st, serr := p.Stats()
			p.Close()
			if err := errors.Join(ierr, serr); err != nil {
				return nil, err
			}
			s := out[info.Name]
			s.RunCount += st.RunCount
			s.Runtime += st.Runtime
			out[info.Name] = s
		}
	}
	return out, nil
}

// netProgCost runs every exchange once in the rauha variants with BPF
// statistics on and returns each program's runs per unit and time per run.
func (b *bench) netProgCost(vs []netVariant, counts []int, denied string) ([]netProgRow, error) {
	root, err := unifiedRoot()
	if err != nil {
		return nil, err
	}
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		return nil, fmt.Errorf("enable BPF statistics: %w", err)
	}
	defer stats.Close()
	var rows []netProgRow
	for _, v := range vs {
		if !v.r.zones {
			continue
		}
		dir := filepath.Join(root, b.cfg.cgPrefix, v.r.name, netID)
		for i, m := range netMetrics {
			before, err := programStats(dir)
			if err != nil {
				return nil, err
			}
			if _, err := b.netExchange(v.r, m.exchange, counts[i], denied); err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
			after, err := programStats(dir)
			if err != nil {
				return nil, err
			}
			units := float64(counts[i]) * netExchanges[m.exchange].unit
			names := slices.Sorted(maps.Keys(after))
			for _, name := range names {
				a := after[name]
				runs := a.RunCount - before[name].RunCount
				if runs == 0 {
					continue
				}
				rows = append(rows, netProgRow{Variant: v.name, Metric: m.name, Program: name,
					RunsPerUnit: float64(runs) / units,
					NsPerRun:    float64((a.Runtime - before[name].Runtime).Nanoseconds()) / float64(runs)})
			}
		}
	}
	return rows, nil
}
