package libzone

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/zone"
)

// CreateOptions are the flags of create and run.
type CreateOptions struct {
	IOOptions
	NoPivot      bool // use MS_MOVE instead of pivot_root (ramdisk roots)
	NoNewKeyring bool // keep the caller's session keyring
	Keep         bool // run: keep the stopped container instead of deleting it
}

// Create creates container id from bundle and leaves its init waiting for
// "start", as "rauha create" does.
func (e *Engine) Create(id string, b *Bundle, o CreateOptions) error {
	_, err := e.launch(id, b, o, actCreate)
	return err
}

// Run creates and starts container id; in the foreground it waits for the
// init, returns its exit status and deletes the container.
func (e *Engine) Run(id string, b *Bundle, o CreateOptions) (int, error) {
	return e.launch(id, b, o, actRun)
}

// launch is the create sequence of DESIGN.md, top to bottom:
// store the zone and its policy → libcontainer builds the container and its
// init waits on the exec fifo → the init's cgroup joins the zone → the
// container is recorded as created. Any failure undoes every earlier step,
// so a failed create leaves no state directory, cgroup or record behind.
func (e *Engine) launch(id string, b *Bundle, o CreateOptions, act action) (status int, retErr error) {
	if err := zone.ValidateName("container id", id); err != nil {
		return -1, err
	}
	spec := b.Spec
	if err := ValidateProcess(spec.Process); err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(b.Dir, "config.json"), err)
	}
	if ok, err := e.exists(id); err != nil {
		return -1, err
	} else if ok {
		return -1, fmt.Errorf("container %s already exists in %s", id, e.root)
	}
	rootfs := spec.Root.Path
	if !filepath.IsAbs(rootfs) {
		rootfs = filepath.Join(b.Dir, rootfs)
	}
	if fi, err := os.Stat(rootfs); err != nil {
		return -1, fmt.Errorf("rootfs %s: %w", rootfs, unwrapPathError(err))
	} else if !fi.IsDir() {
		return -1, fmt.Errorf("rootfs %s: not a directory", rootfs)
	}
	notify := newNotifySocket(e.stateDir(id), os.Getenv("NOTIFY_SOCKET"))
	if notify != nil {
		notify.setupSpec(spec)
	}
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       id,
		UseSystemdCgroup: e.systemdCgroup,
		NoPivotRoot:      o.NoPivot,
		NoNewKeyring:     o.NoNewKeyring,
		Spec:             spec,
		RootlessEUID:     os.Geteuid() != 0,
	})
	if err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(b.Dir, "config.json"), err)
	}

	adm, err := e.admit(id, b.Dir, config.Cgroups.Path, spec.Annotations)
	if err != nil {
		return -1, err
	}
	var lc *libcontainer.Container
	defer func() {
		if retErr == nil {
			return
		}
		if lc != nil {
			if err := lc.Destroy(); err != nil {
				logrus.Warnf("clean up container %s after failed create: %v", id, err)
			}
		}
		if err := e.forget(id, adm.zone.Name); err != nil {
			logrus.Warnf("remove record of container %s after failed create: %v", id, err)
		}
	}()

	lc, err = libcontainer.Create(e.root, id, config)
	if err != nil {
		return -1, fmt.Errorf("create container %s: %w", id, err)
	}
	if notify != nil {
		if err := notify.setupDir(); err != nil {
			return -1, err
		}
		if act == actRun {
			if err := notify.bind(); err != nil {
				return -1, err
			}
			defer notify.Close()
		}
	}
	r := &runner{
		lc:        lc,
		act:       act,
		io:        o.IOOptions,
		listenFDs: socketActivationFiles(),
		notify:    notify,
		ready: func(pid int) error {
			cgid, err := e.joinZone(lc, adm)
			if err != nil {
				return err
			}
			return e.markCreated(adm, pid, cgid)
		},
	}
	status, err = r.run(spec.Process)
	if err != nil {
		return -1, err
	}
	if act == actRun && !o.Detach && !o.Keep {
		c := &Container{e: e, lc: lc}
		if err := c.destroy(); err != nil {
			return status, err
		}
	}
	return status, nil
}

// joinZone makes the container's cgroup a member of its zone and returns the
// cgroup v2 id that identifies it to the kernel.
func (e *Engine) joinZone(lc *libcontainer.Container, adm *admission) (uint64, error) {
	st, err := lc.State()
	if err != nil {
		return 0, fmt.Errorf("container %s: %w", lc.ID(), err)
	}
	unified := st.CgroupPaths[""]
	if unified == "" {
		return 0, nil
	}
	fi, err := os.Stat(unified)
	if err != nil {
		return 0, fmt.Errorf("zone %s: cgroup v2 directory of container %s: %w", adm.zone.Name, lc.ID(), err)
	}
	return inode(fi), nil
}
