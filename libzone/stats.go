package libzone

import (
	"fmt"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/types"
)

// Event is one record of "rauha events", in runc's format.
type Event = types.Event

// StatsEvent reads the container's statistics as a runc "stats" event.
func (c *Container) StatsEvent() (*Event, error) {
	ls, err := c.Stats()
	if err != nil {
		return nil, err
	}
	return &Event{Type: "stats", ID: c.ID(), Data: convertStats(ls.CgroupStats, ls.Interfaces)}, nil
}

func convertStats(cg *cgroups.Stats, ifaces []*types.NetworkInterface) *types.Stats {
	if cg == nil {
		return nil
	}
	var s types.Stats
	s.Pids.Current = cg.PidsStats.Current
	s.Pids.Limit = cg.PidsStats.Limit
	u := cg.CpuStats.CpuUsage
	s.CPU.Usage = types.CpuUsage{
		Total: u.TotalUsage, Kernel: u.UsageInKernelmode, User: u.UsageInUsermode,
		Percpu: u.PercpuUsage, PercpuKernel: u.PercpuUsageInKernelmode, PercpuUser: u.PercpuUsageInUsermode,
	}
	t := cg.CpuStats.ThrottlingData
	s.CPU.Throttling = types.Throttling{Periods: t.Periods, ThrottledPeriods: t.ThrottledPeriods, ThrottledTime: t.ThrottledTime}
	s.CPU.PSI = cg.CpuStats.PSI
	s.CPUSet = types.CPUSet(cg.CPUSetStats)
	m := cg.MemoryStats
	s.Memory = types.Memory{
		Cache: m.Cache, Usage: memoryEntry(m.Usage), Swap: memoryEntry(m.SwapUsage),
		Kernel: memoryEntry(m.KernelUsage), KernelTCP: memoryEntry(m.KernelTCPUsage),
		Raw: m.Stats, PSI: m.PSI,
	}
	b := cg.BlkioStats
	s.Blkio = types.Blkio{
		IoServiceBytesRecursive: blkio(b.IoServiceBytesRecursive),
		IoServicedRecursive:     blkio(b.IoServicedRecursive),
		IoQueuedRecursive:       blkio(b.IoQueuedRecursive),
		IoServiceTimeRecursive:  blkio(b.IoServiceTimeRecursive),
		IoWaitTimeRecursive:     blkio(b.IoWaitTimeRecursive),
		IoMergedRecursive:       blkio(b.IoMergedRecursive),
		IoTimeRecursive:         blkio(b.IoTimeRecursive),
		SectorsRecursive:        blkio(b.SectorsRecursive),
		PSI:                     b.PSI,
	}
	s.Hugetlb = make(map[string]types.Hugetlb, len(cg.HugetlbStats))
	for k, v := range cg.HugetlbStats {
		s.Hugetlb[k] = types.Hugetlb{Usage: v.Usage, Max: v.MaxUsage, Failcnt: v.Failcnt}
	}
	s.NetworkInterfaces = ifaces
	return &s
}

func memoryEntry(d cgroups.MemoryData) types.MemoryEntry {
	return types.MemoryEntry{Limit: d.Limit, Usage: d.Usage, Max: d.MaxUsage, Failcnt: d.Failcnt}
}

func blkio(in []cgroups.BlkioStatEntry) []types.BlkioEntry {
	out := make([]types.BlkioEntry, 0, len(in))
	for _, e := range in {
		out = append(out, types.BlkioEntry(e))
	}
	return out
}

// NotifyOOM returns a channel that receives a value on every OOM kill in the
// container's cgroup and is closed once the cgroup is gone.
func (c *Container) NotifyOOM() (<-chan struct{}, error) {
	ch, err := c.lc.NotifyOOM()
	if err != nil {
		return nil, fmt.Errorf("watch container %s for OOM kills: %w", c.ID(), err)
	}
	return ch, nil
}
