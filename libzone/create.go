package libzone

import (
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

// launch is the create sequence of docs/design.md ("Lifecycle"), top to bottom:
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
	// Past the refusals that need no more than a stat: from here on the
	// init will be forked and moved into its cgroups.
	go primeCgroupAttach()
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

	// 1. The zone and its policy are stored before anything reaches the
	// kernel.
	adm, err := e.admit(id, b.Dir, config.Cgroups.Path, spec.Annotations)
	if err != nil {
		return -1, err
	}
	enf, err := e.enforcer()
	if err != nil {
		e.forgetQuietly(nil, id, adm.zone.Name, adm.rec)
		return -1, err
	}
	defer enf.Close()
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
		e.forgetQuietly(enf, id, adm.zone.Name, adm.rec)
		if adm.newZone {
			// The zone came with this container's annotations: a refused
			// container must not leave it behind.
			e.dropEmptyZone(enf, adm.zone.Name)
		}
		// A refused first container leaves no kernel programs or pins
		// behind either: a root without zones needs none.
		if _, err := e.uninstallIfNoZones(enf); err != nil {
			logrus.Warnf("remove kernel programs after failed create: %v", err)
		}
	}()

	// 2. Admission: controls the policy asks for that cannot be had.
	z := adm.zone
	policy := &z.Policy
	conflicts := append(applyConfigControls(config, policy), enf.Unavailable(policy, config)...)
	conflicts = append(conflicts, execRoutes(config, policy)...)
	conflicts = append(conflicts, loaderRoutes(config, policy)...)
	routes, err := admitEscapeRoutes(config, policy, e.root, enf.Backend() == BackendLSM)
	if err != nil {
		return -1, fmt.Errorf("zone %s: container %s: %w", z.Name, id, err)
	}
	conflicts = append(conflicts, routes...)
	shared, err := e.sharedPidNSConflicts(z, config, enf.Backend() == BackendLSM)
	if err != nil {
		return -1, fmt.Errorf("zone %s: container %s: %w", z.Name, id, err)
	}
	conflicts = append(conflicts, shared...)
	if enf.Backend() != BackendLSM {
		conflicts = append(conflicts, fileGuardRoutes(config, policy)...)
	}
	if len(conflicts) > 0 {
		if policy.Zone.Admission == zone.AdmissionStrict {
			return -1, fmt.Errorf("zone %s (admission strict) refuses container %s: %s cannot be enforced here (use a policy with admission = \"audit\" to start it anyway)",
				z.Name, id, strings.Join(conflicts, "; "))
		}
		logrus.Warnf("zone %s admits container %s without: %s", z.Name, id, strings.Join(conflicts, "; "))
	}

	// 3. The policy is in the kernel before the zone has this member.
	if adm.newZone {
		if err := enf.Claim(z); err != nil {
			return -1, err
		}
	}
	if err := enf.PrepareConfig(z, config); err != nil {
		return -1, err
	}
	if err := closeExecRoutes(config, policy); err != nil {
		return -1, fmt.Errorf("zone %s: exec rules: %w", z.Name, err)
	}
	// The stored policy, not the one admission read: a zone update may have
	// made it stricter since.
	if ok, err := e.applyStored(enf, z.Name); err != nil {
		return -1, err
	} else if !ok {
		return -1, fmt.Errorf("zone %s was deleted while container %s was being created", z.Name, id)
	}
	if adm.newZone {
		if err := e.applyListing(enf, z.Name); err != nil {
			return -1, err
		}
	}

	// 4. libcontainer builds the container; its init waits on the exec fifo.
	stripPoststart(config)
	lc, err = libcontainer.Create(e.root, id, config)
	if err != nil {
		return -1, fmt.Errorf("create container %s: %w", id, err)
	}
	if act == actCreate {
		if err := savePoststart(e.stateDir(id), spec); err != nil {
			return -1, err
		}
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
	var started func(pid int) error
	var execStatus *os.File
	r := &runner{
		lc:        lc,
		act:       act,
		io:        o.IOOptions,
		stateDir:  e.stateDir(id),
		listenFDs: socketActivationFiles(),
		notify:    notify,
		prepare: func(p *libcontainer.Process) (func(), error) {
			limitCapabilities(p, policy)
			status, err := newExecStatus(e.stateDir(id))
			if err != nil {
				return nil, err
			}
			var release func()
			started, release, err = enf.PrepareProcess(z, config, p, 0, status)
			if err != nil || !slices.Contains(p.ExtraFiles, status) {
				// Not started through the shim: nothing will report.
				discardExecStatus(status)
				return release, err
			}
			execStatus = status
			return func() { release(); status.Close() }, nil
		},
		// 5. While the init waits: its rules are completed, its cgroup
		// joins the zone, and the record says it is created. No user code
		// has run yet.
		ready: func(pid int) error {
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
			cgid, err := e.joinZone(enf, lc, adm, config, pid)
			if err != nil {
				return err
			}
			return e.markCreated(adm, pid, cgid)
		},
	}
	if act == actRun {
		hooks := poststartHooks(spec)
		r.started = func() error { return (&Container{e: e, lc: lc}).runPoststart(b.Dir, hooks) }
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
func (e *Engine) joinZone(enf Enforcer, lc *libcontainer.Container, adm *admission, cfg *configs.Config, pid int) (uint64, error) {
	st, err := lc.State()
	if err != nil {
		return 0, fmt.Errorf("container %s: %w", lc.ID(), err)
	}
	unified := st.CgroupPaths[""]
	if unified == "" {
		return 0, fmt.Errorf("zone %s: container %s has no cgroup v2 directory: zone membership needs the unified hierarchy (cgroup2 mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified)", adm.zone.Name, lc.ID())
	}
	rel, err := filepath.Rel(bpf.UnifiedMountpoint(), unified)
	if err != nil || strings.HasPrefix(rel, "..") {
		return 0, fmt.Errorf("zone %s: cgroup %s of container %s is outside %s", adm.zone.Name, unified, lc.ID(), bpf.UnifiedMountpoint())
	}
	adm.rec.CgroupPath = "/" + rel
	netns, err := ownNetns(cfg, pid)
	if err != nil {
		return 0, fmt.Errorf("zone %s: container %s: %w", adm.zone.Name, lc.ID(), err)
	}
	if adm.rec.Addresses, err = memberAddrs(cfg, pid); err != nil {
		return 0, fmt.Errorf("zone %s: container %s: %w", adm.zone.Name, lc.ID(), err)
	}
	if err := enf.Join(adm.zone, adm.rec, netns); err != nil {
		return 0, err
	}
	return adm.rec.CgroupID, nil
}
