package bpf

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
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

// Every CO-RE relocation names a kernel type (a flavor, name___suffix, by
// its base name): one on a type of our own (BPF_CORE_READ of a member of a
// local struct cast to a kernel pointer records one) can never be resolved,
// and the verifier refuses the program on every kernel as soon as it is
// reached.
func TestCORERelocationsNameKernelTypes(t *testing.T) {
	typeName := regexp.MustCompile(`:"([^"]+)"`)
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skip("no kernel BTF:", err)
	}
	spec, err := loadRauha()
	if err != nil {
		t.Fatal(err)
	}
	for name, ps := range spec.Programs {
		for i := range ps.Instructions {
			r := btf.CORERelocationMetadata(&ps.Instructions[i])
			if r == nil {
				continue
			}
			m := typeName.FindStringSubmatch(r.String())
			if m == nil {
				continue // an anonymous type
			}
			base, _, _ := strings.Cut(m[1], "___")
			// Any type of that name: a struct can share its name with a
			// function (io_connect), which makes AnyTypeByName ambiguous.
			if ts, err := kernel.AnyTypesByName(base); err != nil || len(ts) == 0 {
				t.Errorf("%s: instruction %d: %s: no kernel type %q", name, i, r, base)
			}
		}
	}
}
