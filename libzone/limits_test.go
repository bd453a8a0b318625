package libzone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rauha-runtime/rauha/zone"
)

func TestLimitsAbove(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	u16 := func(v uint16) *uint16 { return &v }
	zoneLimits := zone.Resources{PidsMax: 20, MemoryLimit: 64 << 20, CPUShares: 512, IOWeight: 100}
	for _, tc := range []struct {
		name  string
		zone  zone.Resources
		r     specs.LinuxResources
		wants []string // substrings of the violations, in order; none = allowed
	}{
		{"nothing set", zoneLimits, specs.LinuxResources{}, nil},
		{"pids lowered", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(10)}}, nil},
		{"pids at the ceiling", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(20)}}, nil},
		{"pids raised", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(100000)}}, []string{"pids_max 100000 is above the zone's limit 20"}},
		{"pids unlimited (-1)", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(-1)}}, []string{"pids_max unlimited"}},
		{"pids 0 is pids.max 1", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(0)}}, nil},
		{"pids unlimited (-2)", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(-2)}}, []string{"pids_max unlimited"}},
		{"pids raised in a zone without a ceiling", zone.Resources{}, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(-1)}}, nil},
		{"memory lowered", zoneLimits, specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(32 << 20)}}, nil},
		{"memory raised", zoneLimits, specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(1 << 30)}}, []string{"memory_limit 1073741824"}},
		{"memory unlimited", zoneLimits, specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(-1)}}, []string{"memory_limit unlimited"}},
		{"memory 0 leaves it alone", zoneLimits, specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(0)}}, nil},
		{"shares raised", zoneLimits, specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(1024)}}, []string{"cpu_shares 1024"}},
		{"shares 0 (docker's unset)", zoneLimits, specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(0)}}, nil},
		{"io weight raised", zoneLimits, specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{Weight: u16(500)}}, []string{"io_weight 500"}},
		{"io weight of a device raised", zoneLimits, specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{
			WeightDevice: []specs.LinuxWeightDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8, Minor: 0}, Weight: u16(500)}},
		}}, []string{"device 8:0: io_weight 500"}},
		{"unified pids.max max", zoneLimits, specs.LinuxResources{Unified: map[string]string{"pids.max": "max"}}, []string{`unified pids.max "max" is above`}},
		{"unified pids.max lower", zoneLimits, specs.LinuxResources{Unified: map[string]string{"pids.max": "5"}}, nil},
		{"unified memory.max garbage", zoneLimits, specs.LinuxResources{Unified: map[string]string{"memory.max": "lots"}}, []string{"cannot be checked"}},
		{"unified io.weight default", zoneLimits, specs.LinuxResources{Unified: map[string]string{"io.weight": "default 50"}}, nil},
		{"unified cpu.weight above the image of the shares", zoneLimits, specs.LinuxResources{Unified: map[string]string{"cpu.weight": "10000"}}, []string{"cpu.weight"}},
		{"unified file without a ceiling", zoneLimits, specs.LinuxResources{Unified: map[string]string{"memory.high": "max"}}, nil},
		{"two at once", zoneLimits, specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(21)}, Memory: &specs.LinuxMemory{Limit: i64(-1)}}, []string{"pids_max 21", "memory_limit unlimited"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := limitsAbove(&tc.r, &tc.zone)
			if len(got) != len(tc.wants) {
				t.Fatalf("want %d violations %q, got %q", len(tc.wants), tc.wants, got)
			}
			for i, w := range tc.wants {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d: want %q in %q", i, w, got[i])
				}
			}
		})
	}
}

func TestCgroupLimitsAbove(t *testing.T) {
	dir := func(files map[string]string) string {
		d := t.TempDir()
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	p := &zone.Resources{PidsMax: 20, MemoryLimit: 64 << 20}
	for _, tc := range []struct {
		name  string
		paths map[string]string
		want  []string // substrings of the violations
	}{
		{"v1 within", map[string]string{"pids": dir(map[string]string{"pids.max": "20"}), "memory": dir(map[string]string{"memory.limit_in_bytes": "1048576"})}, nil},
		{"v1 pids raised", map[string]string{"pids": dir(map[string]string{"pids.max": "100000"})}, []string{"pids.max: pids_max 100000"}},
		{"v1 pids max", map[string]string{"pids": dir(map[string]string{"pids.max": "max"})}, []string{"pids_max unlimited"}},
		{"v1 memory unlimited", map[string]string{"memory": dir(map[string]string{"memory.limit_in_bytes": "9223372036854771712"})}, []string{"memory_limit unlimited"}},
		{"v2 only", map[string]string{"": dir(map[string]string{"pids.max": "max", "memory.max": "67108864"})}, []string{"pids.max: pids_max unlimited"}},
		{"no files", map[string]string{"": t.TempDir()}, nil},
		{"garbage", map[string]string{"pids": dir(map[string]string{"pids.max": "many"})}, []string{"unreadable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := cgroupLimitsAbove(tc.paths, p)
			if len(got) != len(tc.want) {
				t.Fatalf("want %q, got %q", tc.want, got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("want %q in %q", w, got[i])
				}
			}
		})
	}
}
