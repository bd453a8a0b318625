package bpf

import (
	"slices"
	"strings"
	"testing"
)

// Probe refuses the bpf-lsm backend on a kernel without a hook it attaches
// to: missingHooks names exactly the hooks the kernel's BTF lacks, and
// pathHooks holds every path hook of the object.
func TestMissingHooks(t *testing.T) {
	got, err := missingHooks([]string{"file_open", "no_such_hook_rauha"})
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	if !slices.Equal(got, []string{"no_such_hook_rauha"}) {
		t.Errorf("missingHooks = %q, want only the made-up hook", got)
	}
	spec, err := loadRauha()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range spec.Programs {
		if strings.HasPrefix(p.AttachTo, "path_") && !slices.Contains(pathHooks, p.AttachTo) {
			t.Errorf("%s attaches to %s, which pathHooks does not list", name, p.AttachTo)
		}
	}
	for _, h := range pathHooks {
		if !slices.ContainsFunc(backendPrograms(true), func(p hookProgram) bool { return spec.Programs[p.name].AttachTo == h }) {
			t.Errorf("pathHooks lists %s, which no program attaches to", h)
		}
	}
}
