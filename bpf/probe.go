package bpf

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Probe reports whether BPF-LSM programs work on this kernel by loading and
// attaching a tiny lsm/file_open program and checking that it runs, and
// whether the kernel has every LSM hook the backend needs (pathHooks).
// Neither
// /sys/kernel/security/lsm nor a successful load is proof: some kernels
// refuse the load with EPERM although "bpf" is listed, and a kernel booted
// without bpf in lsm= accepts and attaches the program but never calls it.
// An error means the probe itself could not run, not that LSM is missing.
func Probe() (lsm bool, err error) {
	spec, err := loadProbe()
	if err != nil {
		return false, fmt.Errorf("parse the embedded probe object: %w", err)
	}
	if err := spec.Variables[probeVarProbeTgid].Set(uint32(os.Getpid())); err != nil {
		return false, fmt.Errorf("set probe target: %w", err)
	}
	var objs probeObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		if unavailable(err) {
			return false, nil
		}
		return false, fmt.Errorf("load the BPF-LSM probe: %w", err)
	}
	defer objs.Close()

	l, err := link.AttachLSM(link.LSMOptions{Program: objs.ProbeFileOpen})
	if err != nil {
		if unavailable(err) {
			return false, nil
		}
		return false, fmt.Errorf("attach the BPF-LSM probe: %w", err)
	}
	defer l.Close()

	f, err := os.Open("/proc/self/stat")
	if err != nil {
		return false, fmt.Errorf("open a file to trigger the probe: %w", err)
	}
	f.Close()
	var hits uint64
	if err := objs.ProbeHits.Get(&hits); err != nil {
		return false, fmt.Errorf("read the probe's counter: %w", err)
	}
	if hits == 0 {
		return false, nil
	}
	missing, err := missingHooks(pathHooks)
	if err != nil {
		return false, err
	}
	return len(missing) == 0, nil
}

// pathHooks are the LSM hooks the bpf-lsm backend needs that a kernel may
// be built without (CONFIG_SECURITY_PATH; Debian's, Ubuntu's and Fedora's
// kernels have them): such a kernel gets the landlock fallback instead of
// a backend that cannot install.
var pathHooks = []string{"path_chmod", "path_chown", "path_truncate", "path_unlink", "path_rmdir",
	"path_mknod", "path_mkdir", "path_symlink", "path_link", "path_rename"}

// missingHooks are the LSM hooks of hooks the running kernel lacks.
func missingHooks(hooks []string) ([]string, error) {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("read the kernel's BTF: %w", err)
	}
	var missing []string
	for _, h := range hooks {
		var fn *btf.Func
		err := kernel.TypeByName("bpf_lsm_"+h, &fn)
		if errors.Is(err, btf.ErrNotFound) {
			missing = append(missing, h)
		} else if err != nil {
			return nil, fmt.Errorf("look up LSM hook %s in the kernel's BTF: %w", h, err)
		}
	}
	return missing, nil
}

// unavailable tells "this kernel does not offer BPF-LSM" from other errors.
func unavailable(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, syscall.Errno(524)) || // kernel-internal ENOTSUPP

		errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, btf.ErrNotFound)
}
