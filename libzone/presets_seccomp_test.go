//go:build cgo && seccomp

package libzone

import (
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"

	"github.com/rauha-runtime/rauha/zone"
)

// libcontainer skips a seccomp rule whose name libseccomp cannot resolve, so
// a misspelt name in a preset would deny nothing.
func TestPresetSyscallsKnownToLibseccomp(t *testing.T) {
	for _, name := range zone.PresetNames() {
		p, err := zone.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range p.Syscalls.Deny {
			if _, err := libseccomp.GetSyscallFromName(sc); err != nil {
				t.Errorf("preset %s: libseccomp does not know syscall %q: %v", name, sc, err)
			}
		}
	}
}
