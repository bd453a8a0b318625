package landlock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/exeseal"
)

// The shim is committed prebuilt so that building rauha needs no C
// toolchain; TestShimUpToDate rebuilds it with exactly these lines.
//go:generate x86_64-linux-gnu-gcc -std=c11 -Os -static -nostdlib -nostartfiles -ffreestanding -fno-builtin -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-ident -fno-pie -no-pie -fno-tree-loop-distribute-patterns -Wall -Wextra -Werror -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro -Wl,-z,noseparate-code -s -o shim/shim-amd64 shim/shim.c
//go:generate aarch64-linux-gnu-gcc -std=c11 -Os -static -nostdlib -nostartfiles -ffreestanding -fno-builtin -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-ident -fno-pie -no-pie -fno-tree-loop-distribute-patterns -Wall -Wextra -Werror -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro -Wl,-z,noseparate-code -s -o shim/shim-arm64 shim/shim.c

// shimMarker is the shim's argv[1]; it refuses to run without it.
const shimMarker = "rauha-landlock-shim"

// sealedShim returns the shim as a sealed, executable memfd. Sealing
// (F_SEAL_WRITE and friends) stops a container process from rewriting the
// binary other containers' processes are about to run (CVE-2019-5736).
func sealedShim() (*os.File, error) {
	if len(shimBinary) == 0 {
		return nil, fmt.Errorf("no landlock exec shim is built for %s", runtime.GOARCH)
	}
	f, err := exeseal.CloneBinary(bytes.NewReader(shimBinary), int64(len(shimBinary)), shimMarker, os.TempDir())
	if err != nil {
		return nil, fmt.Errorf("seal the landlock exec shim: %w", err)
	}
	return f, nil
}

// shimArgs is the argv that makes the shim, passed as fd shimFD, enter the
// ruleset passed as fd rulesetFD (none when it is negative) and then exec
// args, reporting a failure on fd statusFD (none when it is negative).
func shimArgs(rulesetFD, shimFD, statusFD int, args []string) []string {
	fd := func(n int) string {
		if n < 0 {
			return "-"
		}
		return strconv.Itoa(n)
	}
	return append([]string{
		"/proc/self/fd/" + strconv.Itoa(shimFD), shimMarker,
		fd(rulesetFD), strconv.Itoa(shimFD), fd(statusFD),
	}, args...)
}

// Wrap makes p enter the Landlock domain of ruleset right before its first
// instruction: the shim and the ruleset become p's last ExtraFiles and the
// shim becomes Args[0]. The shim closes both before it execs p's original
// Args, so the workload sees exactly the fds the caller passed, numbered as
// before (libcontainer keeps 3..3+len(ExtraFiles)-1 open, caller's first).
// Because the PATH lookup moves into the shim, "executable not found" is
// reported when the process starts (exit 127) instead of at create.
//
// With a status file (the write end of a pipe or FIFO; nil for none) the
// shim writes there why the workload did not start, if it did not; a
// successful exec closes it, so the reader sees end-of-file and nothing
// else. The caller closes its own copy once the process has started.
//
// The container must have /proc mounted, as libcontainer execs the shim
// through /proc/self/fd. Call cleanup once the process has started (or
// failed to); it closes the host's copy of the shim.
func Wrap(p *libcontainer.Process, ruleset, status *os.File) (cleanup func(), err error) {
	if ruleset == nil {
		return nil, errors.New("wrap process in landlock: no ruleset")
	}
	if len(p.Args) == 0 {
		return nil, errors.New("wrap process in landlock: the process has no args")
	}
	shim, err := sealedShim()
	if err != nil {
		return nil, err
	}
	rulesetFD := 3 + len(p.ExtraFiles)
	p.ExtraFiles = append(p.ExtraFiles, ruleset, shim)
	statusFD := -1
	if status != nil {
		statusFD = rulesetFD + 2
		p.ExtraFiles = append(p.ExtraFiles, status)
	}
	p.Args = shimArgs(rulesetFD, rulesetFD+1, statusFD, p.Args)
	return func() { shim.Close() }, nil
}

// ReportExec makes p start through the shim without entering a domain: the
// shim only execs p's Args and writes to status (not nil) why that failed.
// It is for a workload whose exec an LSM hook may refuse (the bpf-lsm deny
// lists): libcontainer's init would fail that exec after "start" has
// returned, with nobody left to tell. Cleanup as for Wrap.
func ReportExec(p *libcontainer.Process, status *os.File) (cleanup func(), err error) {
	if status == nil {
		return nil, errors.New("start process through the exec shim: no status file")
	}
	if len(p.Args) == 0 {
		return nil, errors.New("start process through the exec shim: the process has no args")
	}
	shim, err := sealedShim()
	if err != nil {
		return nil, err
	}
	shimFD := 3 + len(p.ExtraFiles)
	p.ExtraFiles = append(p.ExtraFiles, shim, status)
	p.Args = shimArgs(-1, shimFD, shimFD+1, p.Args)
	return func() { shim.Close() }, nil
}
