package libzone

import (
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/zone"
)

// Update applies new cgroup limits to a running container. Fields left nil
// in r keep their current value (runc's update semantics).
// A limit above the container's zone is refused (limits.go) and recorded as
// a "resources" deny event; nothing is changed then.
func (c *Container) Update(r *specs.LinuxResources) error {
	z, err := c.e.memberZone(c.ID())
	if err != nil {
		return err
	}
	if over := limitsAbove(r, &z.Policy.Resources); len(over) > 0 {
		c.e.recordDenial(zone.Event{
			Zone:      z.Name,
			Container: c.ID(),
			Control:   ControlResources,
			Object:    strings.Join(over, "; "),
		})
		return fmt.Errorf("zone %s refuses the update of container %s: %s (the zone's [resources] are ceilings: lower limits are allowed; to raise one, change the zone with 'rauha zone update %s --policy FILE')",
			z.Name, c.ID(), strings.Join(over, "; "), z.Name)
	}
	cfg := c.lc.Config()
	res := cfg.Cgroups.Resources
	if m := r.Memory; m != nil {
		if m.Limit != nil && *m.Limit == -1 && m.Swap == nil {
			// Unlimited memory needs unlimited swap too, or the kernel
			// refuses a limit below the swap limit.
			zero := int64(0)
			m.Swap = &zero
		}
		if m.Kernel != nil || m.KernelTCP != nil { //nolint:staticcheck // still sent by old clients
			logrus.Warn("kernel memory limits are ignored: the kernel no longer supports them")
		}
		setIf(&res.Memory, m.Limit)
		setIf(&res.MemoryReservation, m.Reservation)
		setIf(&res.MemorySwap, m.Swap)
		setIf(&res.MemoryCheckBeforeUpdate, m.CheckBeforeUpdate)
	}
	if cpu := r.CPU; cpu != nil {
		if cpu.Idle != nil && cpu.Shares == nil {
			zero := uint64(0)
			cpu.Shares = &zero
		}
		// A period or quota alone changes only itself; both together
		// replace both (the kernel checks them as a pair).
		setIf(&res.CpuPeriod, cpu.Period)
		setIf(&res.CpuQuota, cpu.Quota)
		if cpu.Burst != nil {
			res.CpuBurst = cpu.Burst
		}
		if cpu.Shares != nil {
			res.CpuShares = *cpu.Shares
			res.CpuWeight = cgroups.ConvertCPUSharesToCgroupV2Value(*cpu.Shares)
		}
		setIf(&res.CpuRtPeriod, cpu.RealtimePeriod)
		setIf(&res.CpuRtRuntime, cpu.RealtimeRuntime)
		if cpu.Cpus != "" {
			res.CpusetCpus = cpu.Cpus
		}
		if cpu.Mems != "" {
			res.CpusetMems = cpu.Mems
		}
		if cpu.Idle != nil {
			res.CPUIdle = cpu.Idle
		}
	}
	if b := r.BlockIO; b != nil {
		setIf(&res.BlkioWeight, b.Weight)
		setIf(&res.BlkioLeafWeight, b.LeafWeight)
		for _, wd := range b.WeightDevice {
			res.BlkioWeightDevice = upsertWeightDevice(res.BlkioWeightDevice, wd)
		}
		for _, t := range []struct {
			dst *[]*cgroups.ThrottleDevice
			src []specs.LinuxThrottleDevice
		}{
			{&res.BlkioThrottleReadBpsDevice, b.ThrottleReadBpsDevice},
			{&res.BlkioThrottleWriteBpsDevice, b.ThrottleWriteBpsDevice},
			{&res.BlkioThrottleReadIOPSDevice, b.ThrottleReadIOPSDevice},
			{&res.BlkioThrottleWriteIOPSDevice, b.ThrottleWriteIOPSDevice},
		} {
			for _, td := range t.src {
				*t.dst = upsertThrottleDevice(*t.dst, td)
			}
		}
	}
	if r.Pids != nil && r.Pids.Limit != nil {
		res.PidsLimit = r.Pids.Limit
	}
	if r.Unified != nil {
		res.Unified = r.Unified
	}
	// Devices are not part of update; re-applying them would briefly deny
	// device access to the running container.
	cfg.Cgroups.SkipDevices = true
	return c.Set(cfg)
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

func upsertWeightDevice(devs []*cgroups.WeightDevice, wd specs.LinuxWeightDevice) []*cgroups.WeightDevice {
	for _, d := range slices.Backward(devs) {
		if d.Major == wd.Major && d.Minor == wd.Minor {
			setIf(&d.Weight, wd.Weight)
			setIf(&d.LeafWeight, wd.LeafWeight)
			return devs
		}
	}
	var w, lw uint16
	setIf(&w, wd.Weight)
	setIf(&lw, wd.LeafWeight)
	return append(devs, cgroups.NewWeightDevice(wd.Major, wd.Minor, w, lw))
}

func upsertThrottleDevice(devs []*cgroups.ThrottleDevice, td specs.LinuxThrottleDevice) []*cgroups.ThrottleDevice {
	for _, d := range slices.Backward(devs) {
		if d.Major == td.Major && d.Minor == td.Minor {
			d.Rate = td.Rate
			return devs
		}
	}
	return append(devs, cgroups.NewThrottleDevice(td.Major, td.Minor, td.Rate))
}
