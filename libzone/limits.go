package libzone

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rauha-runtime/rauha/zone"
)

// A zone's [resources] are ceilings: create lowers a member's limits to them
// (limitResources), update may lower them further but never raise one above
// the zone, and verify reads the member's cgroup files to see that nothing
// did. A value that means "no limit" is above every ceiling. A zero memory
// limit, CPU share or IO weight is not a limit but "leave it as it is"
// (libcontainer writes nothing for it; docker sends those zeros for unset
// fields), and a zero pids limit is pids.max 1: they pass.

// unlimited stands for "no limit" in the comparisons below.
const unlimited = -1

// above describes value as over ceiling (both in the unit of the zone's key),
// or returns "" when it is within. A ceiling of 0 is no ceiling.
func above(key string, value, ceiling int64) string {
	if ceiling <= 0 || (value != unlimited && value <= ceiling) {
		return ""
	}
	v := strconv.FormatInt(value, 10)
	if value == unlimited {
		v = "unlimited"
	}
	return fmt.Sprintf("%s %s is above the zone's limit %d", key, v, ceiling)
}

// limitsAbove lists what in an update request would raise a limit above the
// zone's resources. Only the fields the request sets are judged: a limit the
// request leaves alone keeps its value.
func limitsAbove(r *specs.LinuxResources, p *zone.Resources) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	if r.Pids != nil && r.Pids.Limit != nil {
		// Negative is pids.max "max"; 0 is written as 1 (libcontainer
		// maps it so, like systemd's TasksMax), which is within any limit.
		v := *r.Pids.Limit
		if v < 0 {
			v = unlimited
		}
		add(above("pids_max", v, p.PidsMax))
	}
	if r.Memory != nil && r.Memory.Limit != nil && *r.Memory.Limit != 0 {
		v := *r.Memory.Limit
		if v < 0 {
			v = unlimited
		}
		add(above("memory_limit", v, int64(p.MemoryLimit)))
	}
	if r.CPU != nil && r.CPU.Shares != nil && *r.CPU.Shares != 0 {
		add(above("cpu_shares", clampInt64(*r.CPU.Shares), p.CPUShares))
	}
	if b := r.BlockIO; b != nil {
		if b.Weight != nil && *b.Weight != 0 {
			add(above("io_weight", int64(*b.Weight), p.IOWeight))
		}
		for _, d := range b.WeightDevice {
			if d.Weight != nil && *d.Weight != 0 {
				if s := above("io_weight", int64(*d.Weight), p.IOWeight); s != "" {
					add(fmt.Sprintf("device %d:%d: %s", d.Major, d.Minor, s))
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(r.Unified)) {
		add(unifiedAbove(key, r.Unified[key], p))
	}
	return out
}

// unifiedAbove judges one cgroup v2 file an update writes directly
// (LinuxResources.Unified), which would otherwise be a way around the
// fields above. Values it cannot read are refused when the zone limits that
// file: a ceiling that cannot be checked is not kept.
func unifiedAbove(key, val string, p *zone.Resources) string {
	var ceiling int64
	var name string
	switch key {
	case "pids.max":
		ceiling, name = p.PidsMax, "pids_max"
	case "memory.max":
		ceiling, name = int64(p.MemoryLimit), "memory_limit"
	case "cpu.weight":
		if p.CPUShares > 0 {
			ceiling = int64(cgroups.ConvertCPUSharesToCgroupV2Value(uint64(p.CPUShares)))
		}
		name = "cpu_shares (as cpu.weight)"
	case "io.weight", "io.bfq.weight":
		ceiling, name = p.IOWeight, "io_weight"
	default:
		return ""
	}
	if ceiling <= 0 {
		return ""
	}
	v, err := parseCgroupLimit(val)
	if err != nil {
		return fmt.Sprintf("unified %s %q cannot be checked against the zone's %s limit %d", key, val, name, ceiling)
	}
	if v != unlimited && v <= ceiling {
		return ""
	}
	return fmt.Sprintf("unified %s %q is above the zone's %s limit %d", key, val, name, ceiling)
}

// parseCgroupLimit reads a limit as cgroup files write it: a number, "max",
// or an io weight's "default N".
func parseCgroupLimit(s string) (int64, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "default "))
	if s == "max" {
		return unlimited, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func clampInt64(v uint64) int64 {
	if v > 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

// cgroupLimit is one zone ceiling as a member's cgroup files hold it, in
// the cgroup v1 or the v2 hierarchy.
type cgroupLimit struct {
	key     string // the [resources] key
	ceiling int64
	files   []cgroupFile // the first one present is read
}

type cgroupFile struct {
	subsystem, name string // subsystem "" is the unified (v2) hierarchy
	// toZone converts the file's value to the unit of the zone's key.
	toZone func(int64) int64
}

// memoryV1Unlimited: cgroup v1 writes "no limit" as the largest page-aligned
// int64, not as "max".
const memoryV1Unlimited = int64(1) << 62

func memberCeilings(p *zone.Resources) []cgroupLimit {
	same := func(v int64) int64 { return v }
	memV1 := func(v int64) int64 {
		if v >= memoryV1Unlimited {
			return unlimited
		}
		return v
	}
	// cpu.weight is the v2 image of the shares (cgroups' conversion, which
	// only approximately inverts): compare it with the image of the ceiling.
	cpuCeiling := p.CPUShares
	if cpuCeiling > 0 {
		cpuCeiling = int64(cgroups.ConvertCPUSharesToCgroupV2Value(uint64(cpuCeiling)))
	}
	return []cgroupLimit{
		{"pids_max", p.PidsMax, []cgroupFile{{"pids", "pids.max", same}, {"", "pids.max", same}}},
		{"memory_limit", int64(p.MemoryLimit), []cgroupFile{{"memory", "memory.limit_in_bytes", memV1}, {"", "memory.max", same}}},
		{"cpu_shares", p.CPUShares, []cgroupFile{{"cpu", "cpu.shares", same}}},
		{"cpu_shares (as cpu.weight)", cpuCeiling, []cgroupFile{{"", "cpu.weight", same}}},
		{"io_weight", p.IOWeight, []cgroupFile{
			{"blkio", "blkio.weight", same}, {"blkio", "blkio.bfq.weight", same},
			{"", "io.weight", same}, {"", "io.bfq.weight", same},
		}},
	}
}

// cgroupLimitsAbove reads a member's limits from its cgroup directories
// (subsystem → path, as libcontainer's state lists them) and lists those
// above the zone's ceilings, and the limits it read.
func cgroupLimitsAbove(paths map[string]string, p *zone.Resources) (violations, read []string) {
	for _, l := range memberCeilings(p) {
		if l.ceiling <= 0 {
			continue
		}
		found := false
		for _, f := range l.files {
			dir := paths[f.subsystem]
			if dir == "" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, f.name))
			if err != nil {
				continue // not this hierarchy, or the controller is not there
			}
			found = true
			v, err := parseCgroupLimit(string(b))
			if err != nil {
				violations = append(violations, fmt.Sprintf("%s: unreadable %q", f.name, strings.TrimSpace(string(b))))
				break
			}
			v = f.toZone(v)
			if s := above(l.key, v, l.ceiling); s != "" {
				violations = append(violations, f.name+": "+s)
			} else {
				read = append(read, fmt.Sprintf("%s %s", f.name, strings.TrimSpace(string(b))))
			}
			break
		}
		if !found {
			read = append(read, l.key+": no cgroup file on this host")
		}
	}
	return violations, read
}
