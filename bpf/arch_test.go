package bpf

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
)

// Every architecture's object must offer the programs and maps the loader
// looks up by name: a C change that builds for one target only, or an
// object left behind by a partial `go generate`, fails here on amd64.
func TestObjectsAgreeAcrossArchitectures(t *testing.T) {
	// bpf/vmtest.sh runs the compiled test in a guest without the sources.
	if _, err := os.Stat("kernel.go"); err != nil {
		t.Skip("not run from the source tree:", err)
	}
	for _, obj := range []string{"rauha", "probe"} {
		x86, err := ebpf.LoadCollectionSpec(obj + "_x86_bpfel.o")
		if err != nil {
			t.Fatal(err)
		}
		arm64, err := ebpf.LoadCollectionSpec(obj + "_arm64_bpfel.o")
		if err != nil {
			t.Fatal(err)
		}
		if a, b := slices.Sorted(maps.Keys(x86.Programs)), slices.Sorted(maps.Keys(arm64.Programs)); !slices.Equal(a, b) {
			t.Errorf("%s: programs differ: x86 %v, arm64 %v", obj, a, b)
		}
		if a, b := slices.Sorted(maps.Keys(x86.Maps)), slices.Sorted(maps.Keys(arm64.Maps)); !slices.Equal(a, b) {
			t.Errorf("%s: maps differ: x86 %v, arm64 %v", obj, a, b)
		}
		for name, p := range x86.Programs {
			if q := arm64.Programs[name]; q != nil && (p.Type != q.Type || p.AttachType != q.AttachType || p.AttachTo != q.AttachTo) {
				t.Errorf("%s: program %s attaches as %v/%v/%s on x86 but %v/%v/%s on arm64", obj, name,
					p.Type, p.AttachType, p.AttachTo, q.Type, q.AttachType, q.AttachTo)
			}
		}
	}
}
