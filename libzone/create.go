package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/sirupsen/logrus"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/internal/process"
	"github.com/rauha-runtime/rauha/zone"
)

// CreateOptions are the flags of create and run.
type CreateOptions struct {
	process.IOOptions
	NoPivot      bool // use MS_MOVE instead of pivot_root (ramdisk roots)
	NoNewKeyring bool // keep the caller's session keyring
	Keep         bool // run: keep the stopped container instead of deleting it
}

// Create creates container id from bundle and leaves its init waiting for
// "start", as "rauha create" does.
func (e *Engine) Create(id string, b *Bundle, o CreateOptions) error {
	_, err := e.launch(id, b, o, process.ActCreate)
	return err
}

// Run creates and starts container id; in the foreground it waits for the
// init, returns its exit status and deletes the container.
func (e *Engine) Run(id string, b *Bundle, o CreateOptions) (int, error) {
	return e.launch(id, b, o, process.ActRun)
}

// launch is the create sequence of docs/design.md ("Lifecycle"), top to
// bottom. Every decision comes before the first write: checks that need no
// state, then the zone and whether it admits the container, and only then
// the records, the kernel and the container itself. From persist on, any
// failure undoes every earlier step (undoCreate), so a failed create leaves
// no state directory, cgroup, record, new zone or kernel state behind.
func (e *Engine) launch(id string, b *Bundle, o CreateOptions, act process.Action) (status int, retErr error) {
	if err := e.checkRequest(id, b); err != nil {
		return -1, err
	}
	// Past the refusals that need no more than a stat: from here on the
	// init will be forked and moved into its cgroups.
	go primeCgroupAttach()
	notify := process.NewNotifySocket(e.stateDir(id), os.Getenv("NOTIFY_SOCKET"))
	if notify != nil {
		notify.SetupSpec(b.Spec)
	}
	a, err := e.admitAndStore(id, b, o)
	if err != nil {
		return -1, err
	}
	// The kernel's maps open and the policy goes into them while
	// libcontainer sets the init up, tens of milliseconds in which this
	// process mostly waits; the init joins the zone once that is done
	// (startInit). What the configuration and the init need meanwhile is
	// the backend alone.
	kernel := e.pushPolicy(a)
	e.startWiring(a)
	var lc *libcontainer.Container
	defer func() {
		// Undo what the push and the wiring did, not beside them.
		a.stopWiring()
		enf, _ := kernel()
		if retErr != nil {
			e.undoCreate(enf, lc, a)
		}
		if enf != nil {
			enf.Close()
		}
	}()
	prep := backend{lsm: a.lsm}
	if err := e.prepareConfig(prep, a); err != nil {
		return -1, err
	}
	if lc, err = e.createContainer(a); err != nil {
		return -1, err
	}
	if status, err = e.startInit(prep, kernel, lc, a, b, o, act, notify); err != nil {
		return -1, err
	}
	if act == process.ActRun && !o.Detach && !o.Keep {
		c := &Container{e: e, lc: lc}
		if err := c.destroy(); err != nil {
			return status, err
		}
	}
	return status, nil
}

// checkRequest refuses what needs no state to refuse: an invalid container
// id or process, an id that is taken, a rootfs that is not a directory.
func (e *Engine) checkRequest(id string, b *Bundle) error {
	if err := zone.ValidateName("container id", id); err != nil {
		return err
	}
	spec := b.Spec
	if err := ValidateProcess(spec.Process); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(b.Dir, "config.json"), err)
	}
	if ok, err := e.exists(id); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("container %s already exists in %s", id, e.root)
	}
	rootfs := spec.Root.Path
	if !filepath.IsAbs(rootfs) {
		rootfs = filepath.Join(b.Dir, rootfs)
	}
	if fi, err := os.Stat(rootfs); err != nil {
		return fmt.Errorf("rootfs %s: %w", rootfs, unwrapPathError(err))
	} else if !fi.IsDir() {
		return fmt.Errorf("rootfs %s: not a directory", rootfs)
	}
	return nil
}

// libcontainerConfig converts the bundle's OCI spec into the libcontainer
// configuration that admission narrows and judges.
func (e *Engine) libcontainerConfig(id string, b *Bundle, o CreateOptions) (*configs.Config, error) {
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       id,
		UseSystemdCgroup: e.systemdCgroup,
		NoPivotRoot:      o.NoPivot,
		NoNewKeyring:     o.NoNewKeyring,
		Spec:             b.Spec,
		RootlessEUID:     os.Geteuid() != 0,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(b.Dir, "config.json"), err)
	}
	return config, nil
}

// undoCreate removes what a create that failed after persist left: the
// libcontainer container, the record and kernel membership, the zone when it
// came with the container, and the root's kernel programs when no zone is
// left (a root without zones needs none).
// enf is nil when the kernel's state could not be opened: then only the
// container and its record go.
func (e *Engine) undoCreate(enf Enforcer, lc *libcontainer.Container, a *admission) {
	if lc != nil {
		if err := lc.Destroy(); err != nil {
			logrus.Warnf("clean up container %s after failed create: %v", a.rec.ID, err)
		}
	}
	e.forgetQuietly(enf, a.rec.ID, a.zone.Name, a.rec)
	if enf == nil {
		return
	}
	if a.newZone {
		if _, err := e.dropEmptyZone(enf, a.zone.Name); err != nil {
			logrus.Warnf("remove zone %s after failed create: %v", a.zone.Name, err)
		}
	}
	if _, err := e.uninstallIfNoZones(enf); err != nil {
		logrus.Warnf("remove kernel programs after failed create: %v", err)
	}
}

// prepareConfig completes the container's configuration for its zone: the
// backend's mounts and seccomp rules, and exec routes closed.
func (e *Engine) prepareConfig(prep backend, a *admission) error {
	z := a.zone
	if err := prep.PrepareConfig(z, a.config); err != nil {
		return err
	}
	if err := closeExecRoutes(a.config, &z.Policy); err != nil {
		return fmt.Errorf("zone %s: exec rules: %w", z.Name, err)
	}
	return nil
}

// pushPolicy opens the kernel's state and puts the zone's policy in it
// before the zone has this member, beside the rest of create: a new zone
// claims its id, and the policy is pushed as the store holds it now. The
// function it returns waits for that and returns the enforcer (nil when
// it could not be opened) and the error, the same on every call.
func (e *Engine) pushPolicy(a *admission) (wait func() (Enforcer, error)) {
	return beside(func() (Enforcer, error) {
		enf, err := e.openEnforcer(a.lsm)
		if err == nil {
			err = e.pushStored(enf, a)
		}
		return enf, err
	})
}

func (e *Engine) pushStored(enf Enforcer, a *admission) error {
	z := a.zone
	if a.newZone {
		if err := enf.Claim(z); err != nil {
			return err
		}
	}
	// The stored policy, not the one admission read: a zone update may have
	// made it stricter since.
	if ok, err := e.applyStored(enf, z.Name); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("zone %s was deleted while container %s was being created", z.Name, a.rec.ID)
	}
	if a.newZone {
		// Zones whose network.allowed_zones name this one were pushed
		// while it did not exist: their lists now resolve to its id.
		if err := e.applyListing(enf, z.Name); err != nil {
			return err
		}
	}
	return nil
}

// createContainer has libcontainer build the container (its state
// directory and cgroups). Poststart hooks are taken out of the
// configuration: rauha runs them itself, after start.
func (e *Engine) createContainer(a *admission) (*libcontainer.Container, error) {
	stripPoststart(a.config)
	lc, err := libcontainer.Create(e.root, a.rec.ID, a.config)
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", a.rec.ID, err)
	}
	return lc, nil
}

// startInit starts the container's init, confined by the zone from its
// first instruction. While the init waits on the exec fifo (no user code
// has run), its rules are completed, its cgroup joins the zone and the
// record says it is created. run then lets it go; create leaves it waiting.
func (e *Engine) startInit(prep backend, kernel func() (Enforcer, error), lc *libcontainer.Container, a *admission, b *Bundle, o CreateOptions, act process.Action, notify *process.NotifySocket) (int, error) {
	id, z, spec := a.rec.ID, a.zone, b.Spec
	if act == process.ActCreate {
		if err := savePoststart(e.stateDir(id), spec); err != nil {
			return -1, err
		}
	}
	if notify != nil {
		if err := notify.SetupDir(); err != nil {
			return -1, err
		}
		if act == process.ActRun {
			if err := notify.Bind(); err != nil {
				return -1, err
			}
			defer notify.Close()
		}
	}
	var started func(pid int) error
	var execStatus *os.File
	r := &process.Runner{
		Container: lc,
		Action:    act,
		IO:        o.IOOptions,
		StateDir:  e.stateDir(id),
		Notify:    notify,
		Prepare: func(p *libcontainer.Process) (func(), error) {
			limitCapabilities(p, &z.Policy)
			status, err := process.NewExecStatus(e.stateDir(id))
			if err != nil {
				return nil, err
			}
			var release func()
			started, release, err = prep.PrepareProcess(z, a.config, p, 0, status)
			if err == nil {
				// Last: the rules above judge the namespace the bundle
				// asked for, not the path the init joins instead.
				if err = a.joinWiring(); err != nil {
					release()
				}
			}
			if err != nil || !slices.Contains(p.ExtraFiles, status) {
				// Not started through the shim: nothing will report.
				process.DiscardExecStatus(status)
				return release, err
			}
			execStatus = status
			return func() { release(); status.Close() }, nil
		},
		Ready: func(pid int) error {
			if execStatus != nil {
				// The init has its own copy; with ours open, the reader
				// would never see the end of the shim's.
				execStatus.Close()
			}
			if started != nil {
				if err := started(pid); err != nil {
					return err
				}
			}
			enf, err := kernel()
			if err != nil {
				return err
			}
			return e.joinZone(enf, lc, a, pid)
		},
	}
	if act == process.ActRun {
		hooks := poststartHooks(spec)
		r.Started = func() error { return (&Container{e: e, lc: lc}).runPoststart(b.Dir, hooks) }
	}
	return r.Run(spec.Process)
}

// joinZone makes the container's cgroup a member of its zone and completes
// its record (markCreated). The record is stored while the kernel work is
// done, so a create killed in between can leave a record that says
// "created" for a container that never joined: the state directory holds
// the joining file until the join has finished, start and exec refuse a
// container that has it, and reconcile, which joins every live member,
// removes it.
func (e *Engine) joinZone(enf Enforcer, lc *libcontainer.Container, adm *admission, pid int) error {
	st, err := lc.State()
	if err != nil {
		return fmt.Errorf("container %s: %w", lc.ID(), err)
	}
	unified := st.CgroupPaths[""]
	if unified == "" {
		return fmt.Errorf("zone %s: container %s has no cgroup v2 directory: zone membership needs the unified hierarchy (cgroup2 mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified)", adm.zone.Name, lc.ID())
	}
	rel, err := filepath.Rel(bpf.UnifiedMountpoint(), unified)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("zone %s: cgroup %s of container %s is outside %s", adm.zone.Name, unified, lc.ID(), bpf.UnifiedMountpoint())
	}
	adm.rec.CgroupPath = "/" + rel
	if adm.rec.CgroupID, err = bpf.CgroupID(unified); err != nil {
		return fmt.Errorf("zone %s: container %s: %w", adm.zone.Name, lc.ID(), err)
	}
	netns, err := ownNetns(adm.config, pid)
	if err != nil {
		return fmt.Errorf("zone %s: container %s: %w", adm.zone.Name, lc.ID(), err)
	}
	if adm.rec.Lease != nil {
		// plugMember reads the namespace's addresses as memberAddrs does.
		if adm.rec.Addresses, err = e.wiredAddrs(adm, pid); err != nil {
			return fmt.Errorf("zone %s: container %s: bridged network: %w", adm.zone.Name, lc.ID(), err)
		}
	} else if !bareNetns(adm.config) {
		if adm.rec.Addresses, err = memberAddrs(adm.config, pid); err != nil {
			return fmt.Errorf("zone %s: container %s: %w", adm.zone.Name, lc.ID(), err)
		}
	}
	adm.rec.Pid = pid // a learning zone reads the init's mount namespace
	adm.rec.Status = recordCreated
	joining := filepath.Join(e.stateDir(lc.ID()), joiningFile)
	if err := os.WriteFile(joining, nil, 0o600); err != nil {
		return fmt.Errorf("container %s: %w", lc.ID(), err)
	}
	rec := *adm.rec // Join sets the cgroup id in adm.rec again
	marked := besideErr(func() error { return e.markCreated(rec) })
	joinErr := e.join(enf, adm.zone, adm.rec, netns)
	if err := errors.Join(joinErr, marked()); err != nil {
		return err
	}
	return os.Remove(joining)
}
