package landlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStart measures what the shim adds to a process start: "direct"
// runs busybox true, "shim" runs it through the shim entering a domain (the
// sealed memfd made once, as Wrap does per process: see "seal").
func BenchmarkStart(b *testing.B) {
	requireLandlock(b, 1)
	rootfs := newRootfs(b)
	target := filepath.Join(rootfs, "bin/true")
	rs, _ := build(b, rootfs, Rules{Writable: []string{"/tmp"}, Deny: []string{"/etc/shadow"}})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			mustOK(b, exec.Command(target).Run())
		}
	})
	b.Run("shim", func(b *testing.B) {
		shim, err := sealedShim()
		mustOK(b, err)
		defer shim.Close()
		for b.Loop() {
			cmd := exec.Command("/proc/self/fd/4", shimArgs(3, 4, -1, []string{target})[1:]...)
			cmd.ExtraFiles = []*os.File{rs, shim}
			mustOK(b, cmd.Run())
		}
	})
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			f, err := sealedShim()
			mustOK(b, err)
			f.Close()
		}
	})
}

// BenchmarkBuildRuleset measures building a typical ruleset and one that
// enumerates a large directory (/bin, ~400 entries).
func BenchmarkBuildRuleset(b *testing.B) {
	requireLandlock(b, 1)
	rootfs := newRootfs(b)
	for name, r := range map[string]Rules{
		"deny-etc-shadow":   {Writable: []string{"/tmp"}, Deny: []string{"/etc/shadow"}},
		"exec-deny-in-/bin": {ExecDeny: []string{"/bin/busybox"}},
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				f, _, err := BuildRuleset(rootfs, r)
				mustOK(b, err)
				f.Close()
			}
		})
	}
}
