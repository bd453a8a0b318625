package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/docker/go-units"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/urfave/cli/v2"
)

var updateCommand = &cli.Command{
	Name:      "update",
	Usage:     "change the resource limits of a running container",
	ArgsUsage: "<container-id>",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "resources", Aliases: []string{"r"}, Usage: "LinuxResources JSON file, or - for stdin (the other flags are ignored then)"},
		&cli.IntFlag{Name: "blkio-weight", Usage: "block IO weight, 10 to 1000"},
		&cli.StringFlag{Name: "cpu-period", Usage: "CPU CFS period in microseconds"},
		&cli.StringFlag{Name: "cpu-quota", Usage: "CPU CFS quota in microseconds"},
		&cli.StringFlag{Name: "cpu-burst", Usage: "CPU CFS burst in microseconds"},
		&cli.StringFlag{Name: "cpu-share", Usage: "CPU shares (relative weight)"},
		&cli.StringFlag{Name: "cpu-rt-period", Usage: "CPU realtime period in microseconds"},
		&cli.StringFlag{Name: "cpu-rt-runtime", Usage: "CPU realtime runtime in microseconds"},
		&cli.StringFlag{Name: "cpu-idle", Usage: "cgroup v2 cpu.idle (0 or 1)"},
		&cli.StringFlag{Name: "cpuset-cpus", Usage: "CPUs the container may use (0-3, 0,1)"},
		&cli.StringFlag{Name: "cpuset-mems", Usage: "memory nodes the container may use (0-3, 0,1)"},
		&cli.StringFlag{Name: "memory", Usage: "memory limit (bytes or 512m; -1 = unlimited)"},
		&cli.StringFlag{Name: "memory-reservation", Usage: "memory soft limit"},
		&cli.StringFlag{Name: "memory-swap", Usage: "memory+swap limit (-1 = unlimited)"},
		&cli.StringFlag{Name: "kernel-memory", Usage: "ignored: the kernel no longer supports it", Hidden: true},
		&cli.StringFlag{Name: "kernel-memory-tcp", Usage: "ignored: the kernel no longer supports it", Hidden: true},
		&cli.IntFlag{Name: "pids-limit", Usage: "maximum number of processes (-1 = unlimited)"},
		&cli.StringFlag{Name: "l3-cache-schema", Usage: "Intel RDT/CAT L3 cache schema (L3:<cache_id>=<cbm>;...)"},
		&cli.StringFlag{Name: "mem-bw-schema", Usage: "Intel RDT/MBA memory bandwidth schema (MB:<cache_id>=<bandwidth>;...)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		r, err := resourcesFromFlags(c)
		if err != nil {
			return err
		}
		ct, err := loadContainer(c)
		if err != nil {
			return err
		}
		return ct.Update(r, &specs.LinuxIntelRdt{
			L3CacheSchema: c.String("l3-cache-schema"),
			MemBwSchema:   c.String("mem-bw-schema"),
		})
	},
}

func resourcesFromFlags(c *cli.Context) (*specs.LinuxResources, error) {
	r := &specs.LinuxResources{
		Memory:  &specs.LinuxMemory{},
		CPU:     &specs.LinuxCPU{},
		BlockIO: &specs.LinuxBlockIO{},
		Pids:    &specs.LinuxPids{},
	}
	if in := c.String("resources"); in != "" {
		var src io.Reader = os.Stdin
		if in != "-" {
			f, err := os.Open(in)
			if err != nil {
				return nil, fmt.Errorf("--resources: %w", err)
			}
			defer f.Close()
			src = f
		}
		if err := json.NewDecoder(src).Decode(r); err != nil {
			return nil, fmt.Errorf("--resources %s: malformed LinuxResources JSON: %w", in, err)
		}
		return r, nil
	}
	if v := c.Int("blkio-weight"); v != 0 {
		w := uint16(v)
		r.BlockIO.Weight = &w
	}
	r.CPU.Cpus = c.String("cpuset-cpus")
	r.CPU.Mems = c.String("cpuset-mems")
	for _, f := range []struct {
		name string
		dst  **uint64
	}{
		{"cpu-period", &r.CPU.Period}, {"cpu-burst", &r.CPU.Burst},
		{"cpu-rt-period", &r.CPU.RealtimePeriod}, {"cpu-share", &r.CPU.Shares},
	} {
		if s := c.String(f.name); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("invalid --%s %q: %w", f.name, s, err)
			}
			*f.dst = &v
		}
	}
	for _, f := range []struct {
		name string
		dst  **int64
	}{
		{"cpu-quota", &r.CPU.Quota}, {"cpu-rt-runtime", &r.CPU.RealtimeRuntime}, {"cpu-idle", &r.CPU.Idle},
	} {
		if s := c.String(f.name); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("invalid --%s %q: %w", f.name, s, err)
			}
			*f.dst = &v
		}
	}
	for _, f := range []struct {
		name string
		dst  **int64
	}{
		{"memory", &r.Memory.Limit}, {"memory-swap", &r.Memory.Swap}, {"memory-reservation", &r.Memory.Reservation},
		{"kernel-memory", &r.Memory.Kernel}, {"kernel-memory-tcp", &r.Memory.KernelTCP}, //nolint:staticcheck // accepted, then ignored with a warning
	} {
		if s := c.String(f.name); s != "" {
			v := int64(-1)
			if s != "-1" {
				var err error
				if v, err = units.RAMInBytes(s); err != nil {
					return nil, fmt.Errorf("invalid --%s %q: %w", f.name, s, err)
				}
			}
			*f.dst = &v
		}
	}
	if c.IsSet("pids-limit") {
		v := int64(c.Int("pids-limit"))
		r.Pids.Limit = &v
	}
	return r, nil
}
