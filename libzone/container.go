package libzone

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/utils"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/internal/process"
	"github.com/rauha-runtime/rauha/zone"
)

// Container is a loaded container: libcontainer's view plus its zone.
type Container struct {
	e  *Engine
	lc *libcontainer.Container
}

// Load opens an existing container.
func (e *Engine) Load(id string) (*Container, error) {
	if err := zone.ValidateName("container id", id); err != nil {
		return nil, err
	}
	lc, err := libcontainer.Load(e.root, id)
	if err != nil {
		if errors.Is(err, libcontainer.ErrNotExist) {
			return nil, fmt.Errorf("container %s does not exist: %w", id, ErrNotExist)
		}
		return nil, fmt.Errorf("load container %s: %w", id, err)
	}
	return &Container{e: e, lc: lc}, nil
}

// ID is the container id.
func (c *Container) ID() string { return c.lc.ID() }

// Status is the container's status, as the OCI spec names it.
func (c *Container) Status() (string, error) {
	s, err := c.lc.Status()
	if err != nil {
		return "", fmt.Errorf("container %s: %w", c.ID(), err)
	}
	return s.String(), nil
}

// State is what "rauha state" prints: runc's state document plus the zone.
type State struct {
	OCIVersion  string            `json:"ociVersion"`
	ID          string            `json:"id"`
	Pid         int               `json:"pid"`
	Status      string            `json:"status"`
	Bundle      string            `json:"bundle"`
	Rootfs      string            `json:"rootfs"`
	Created     time.Time         `json:"created"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Owner       string            `json:"owner"`
	Zone        string            `json:"zone,omitempty"`
}

// State returns the container's state, read from its state file as
// Engine.State reads it. The zone comes from the container's own config,
// so reading state needs no database access.
func (c *Container) State() (*State, error) { return c.e.State(c.ID()) }

// zoneOf names the zone a container belongs to: the annotation, or a zone
// of its own named after it.
func zoneOf(id string, annotations map[string]string) string {
	if z := annotations[AnnotationZone]; z != "" {
		return z
	}
	return id
}

// Start runs the user process of created container id and then the
// poststart hooks create kept. It needs no libcontainer.Container: the
// init waits on the exec fifo (stateFile.execFifo); only hooks load one,
// for the OCI state they read and the kill when one fails.
func (e *Engine) Start(id string) error {
	sf, err := e.readStateFile(id)
	if err != nil {
		return err
	}
	status, err := sf.status()
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	switch status {
	case "created":
	case "stopped":
		return fmt.Errorf("cannot start container %s: it has stopped", id)
	case "running":
		return fmt.Errorf("cannot start container %s: it is already running", id)
	default:
		return fmt.Errorf("cannot start container %s in the %s state", id, status)
	}
	if err := checkJoined(sf.dir, id); err != nil {
		return err
	}
	notify := process.NewNotifySocket(sf.dir, os.Getenv("NOTIFY_SOCKET"))
	if notify != nil {
		if err := notify.Bind(); err != nil {
			return err
		}
		defer notify.Close()
	}
	execStatus, err := process.WatchExecStatus(sf.dir)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if err := sf.execFifo(); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if execStatus != nil {
		if err := execStatus.Wait(); err != nil {
			return fmt.Errorf("start container %s: %w", id, err)
		}
	}
	if hooks, err := savedPoststart(sf.dir); err != nil {
		return err
	} else if len(hooks) > 0 {
		c, err := e.Load(id)
		if err != nil {
			return err
		}
		bundle, _ := utils.Annotations(sf.Config.Labels)
		if err := c.runPoststart(bundle, hooks); err != nil {
			return err
		}
	}
	if notify != nil {
		return notify.Run(sf.Pid)
	}
	return nil
}

// Signal sends sig to container id's init. With all, a stopped container
// is not an error (runc's obsolete --all). The init's pid and start time
// are all it takes, except for SIGKILL to a container without a PID
// namespace of its own (every process in its cgroup gets it) or to a
// paused one (a v1 freezer must thaw for it): libcontainer does those.
func (e *Engine) Signal(id string, sig unix.Signal, all bool) error {
	sf, err := e.readStateFile(id)
	if err != nil {
		return err
	}
	if sig == unix.SIGKILL {
		if frozen, err := sf.frozen(); err != nil || frozen || !sf.privatePID() {
			c, err := e.Load(id)
			if err != nil {
				return err
			}
			return c.Signal(sig, all)
		}
	}
	err = sf.signalInit(sig)
	if errors.Is(err, errInitGone) {
		if all {
			return nil
		}
		return fmt.Errorf("cannot signal container %s: %w", id, ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("signal container %s: %w", id, err)
	}
	return nil
}

// Signal sends sig to the container's init. With all, a stopped container
// is not an error (runc's obsolete --all).
func (c *Container) Signal(sig unix.Signal, all bool) error {
	err := c.lc.Signal(sig)
	if errors.Is(err, libcontainer.ErrNotRunning) {
		if all {
			return nil
		}
		return fmt.Errorf("cannot signal container %s: %w", c.ID(), ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("signal container %s: %w", c.ID(), err)
	}
	return nil
}

// Pause freezes every process of the container.
func (c *Container) Pause() error {
	if err := c.lc.Pause(); err != nil {
		return fmt.Errorf("pause container %s: %w", c.ID(), err)
	}
	return nil
}

// Resume thaws a paused container.
func (c *Container) Resume() error {
	if err := c.lc.Resume(); err != nil {
		return fmt.Errorf("resume container %s: %w", c.ID(), err)
	}
	return nil
}

// Processes lists the host pids of the container's processes.
func (c *Container) Processes() ([]int, error) {
	pids, err := c.lc.Processes()
	if err != nil {
		return nil, fmt.Errorf("list processes of container %s: %w", c.ID(), err)
	}
	return pids, nil
}

// Stats reads the container's cgroup and network statistics.
func (c *Container) Stats() (*libcontainer.Stats, error) {
	s, err := c.lc.Stats()
	if err != nil {
		return nil, fmt.Errorf("stats of container %s: %w", c.ID(), err)
	}
	return s, nil
}

// Config is the container's libcontainer configuration.
func (c *Container) Config() configs.Config { return c.lc.Config() }

// Set applies new cgroup resources to a running container.
func (c *Container) Set(cfg configs.Config) error {
	if err := c.lc.Set(cfg); err != nil {
		return fmt.Errorf("update container %s: %w", c.ID(), err)
	}
	return nil
}

// recordDeniedLinks replaces the other names of denied inodes that c's
// state lists (deniedLinksLabel) with links. The configuration is saved
// through libcontainer, whose Set applies the cgroup resources again as
// they are (devices skipped, as "update" skips them); a container that
// stopped meanwhile has nothing left to check.
func (c *Container) recordDeniedLinks(links []string) error {
	raw, err := json.Marshal(links)
	if err != nil {
		return err
	}
	cfg := c.lc.Config()
	cfg.Labels = append(slices.DeleteFunc(slices.Clone(cfg.Labels), func(l string) bool {
		return strings.HasPrefix(l, deniedLinksLabel+"=")
	}), deniedLinksLabel+"="+string(raw))
	if cfg.Cgroups != nil && cfg.Cgroups.Resources != nil {
		cg := *cfg.Cgroups
		res := *cg.Resources
		res.SkipDevices = true
		cg.Resources = &res
		cfg.Cgroups = &cg
	}
	if err := c.lc.Set(cfg); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		return err
	}
	return nil
}

// Delete removes container id: its processes (when force, or when it was
// only created), its cgroups and state, its zone membership and record. A
// stopped container that is only directories to remove (plainDestroy) is
// removed from its state file; any other loads it through libcontainer.
// The first is what podman, docker and every short-lived container delete.
func (e *Engine) Delete(id string, force bool) error {
	// A root whose programs are installed opens them while the state is
	// read: destroy needs them first thing (a millisecond of delete).
	opened := e.installedEnforcer()
	if opened != nil {
		defer closeOpened(opened)
	}
	sf, err := e.readStateFile(id)
	if err != nil {
		return err
	}
	if sf.plainDestroy() {
		status, err := sf.status()
		if err != nil {
			return fmt.Errorf("container %s: %w", id, err)
		}
		if status == "stopped" {
			return e.destroy(id, sf.destroy, opened)
		}
	}
	c, err := e.Load(id)
	if err != nil {
		return err
	}
	return c.delete(force, opened)
}

// installedEnforcer opens the root's enforcer beside the caller when the
// root has programs installed; nil when it has none (opening would install
// them, which a delete that fails must not do).
func (e *Engine) installedEnforcer() (wait func() (Enforcer, error)) {
	lsm, known := bpf.InstalledBackend(bpf.PinDirFor(e.root))
	if !known {
		return nil
	}
	return beside(func() (Enforcer, error) { return e.openEnforcer(lsm) })
}

// closeOpened waits for an enforcer opened beside and closes it.
func closeOpened(wait func() (Enforcer, error)) {
	if enf, err := wait(); err == nil {
		enf.Close()
	}
}

// delete is Delete of a loaded container; opened is as for destroy.
func (c *Container) delete(force bool, opened func() (Enforcer, error)) error {
	status, err := c.lc.Status()
	if err != nil {
		return fmt.Errorf("container %s: %w", c.ID(), err)
	}
	switch {
	case status == libcontainer.Stopped:
	case status == libcontainer.Created || force:
		if err := c.kill(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("cannot delete container %s that is not stopped: %s (stop it first, or use --force)", c.ID(), status)
	}
	return c.e.destroy(c.ID(), c.lc.Destroy, opened)
}

// kill sends SIGKILL and waits until the init is gone. A zombie counts as
// gone: PID 1 on some hosts reaps orphans only after a second or two.
func (c *Container) kill() error {
	_ = c.lc.Signal(unix.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for wait := time.Millisecond; time.Now().Before(deadline); wait = min(wait*2, 50*time.Millisecond) {
		if err := c.lc.Signal(unix.Signal(0)); err != nil {
			return nil
		}
		time.Sleep(wait)
	}
	return fmt.Errorf("container %s: init still running 10s after SIGKILL", c.ID())
}

func (c *Container) destroy() error { return c.e.destroy(c.ID(), c.lc.Destroy, nil) }

// destroy removes container id with remove (libcontainer's Destroy, or
// stateFile.destroy), then its zone membership and its record, last. opened
// is the enforcer the caller is opening and will close; when it is nil,
// destroy opens one beside the read of the record (neither needs the other)
// and closes it.
func (e *Engine) destroy(id string, remove func() error, opened func() (Enforcer, error)) error {
	if opened == nil {
		opened = beside(e.enforcer)
		defer closeOpened(opened)
	}
	rec, err := e.record(id)
	enf, enfErr := opened()
	if err != nil {
		return err
	}
	// The record names the zone; only without one does the zone have to
	// come from the state's annotations.
	zoneName := id
	if rec != nil {
		zoneName = rec.Zone
	} else if st, err := e.State(id); err == nil {
		zoneName = st.Zone
	}
	// The enforcer before the removal: events of the member that wait in
	// the kernel are judged while its record and state still say where
	// their paths resolve (rulepaths.go); after it, by their words alone.
	// A look at the ring buffer first: a delete with nothing pending
	// drains nothing. A failure here does not keep the container.
	if enfErr == nil {
		if pending, err := enf.EventsPending(); err != nil {
			logrus.Warnf("container %s: look for pending events: %v", id, err)
		} else if pending {
			if err := e.drain(enf, zone.NewEventLog(e.root)); err != nil {
				logrus.Warnf("container %s: collect pending events before it goes: %v", id, err)
			}
		}
	}
	var hookErr error
	// A stopped member's network namespace is gone or going: its veth
	// needs nothing of the container's state.
	unplugged := e.unplugBeside(rec)
	if err := remove(); err != nil {
		// libcontainer runs the poststop hooks after it has removed the
		// cgroups and the state: with the state gone, the container is
		// gone, and so must be its membership and record (as with runc,
		// nothing is left); the hook's failure is still delete's.
		if _, serr := os.Stat(e.stateDir(id)); !errors.Is(serr, os.ErrNotExist) {
			_ = dropUnplug(unplugged)
			return fmt.Errorf("destroy container %s: %w", id, err)
		}
		hookErr = err
	}
	if enfErr != nil {
		return errors.Join(hookErr, dropUnplug(unplugged), enfErr)
	}
	return errors.Join(hookErr, e.releaseUnplugged(enf, id, zoneName, rec, unplugged))
}

// RemoveStale removes what a create that died before writing its state
// left behind: the bare state directory and the container's record. It
// changes nothing when there is nothing to remove.
func (e *Engine) RemoveStale(id string) error {
	if err := zone.ValidateName("container id", id); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(e.root, id)); err != nil {
		return fmt.Errorf("remove state of %s: %w", id, err)
	}
	rec, err := e.record(id)
	if err != nil || rec == nil {
		return err
	}
	enf, err := e.enforcer()
	if err != nil {
		return err
	}
	defer enf.Close()
	return e.removeStaleState(enf, rec)
}

// removeStaleState removes everything of a recorded container whose
// libcontainer state is gone: its state directory, its cgroups (made
// before libcontainer saved its state), its kernel membership and its
// record. The record goes last, so a failure leaves it for reconcile.
func (e *Engine) removeStaleState(enf Enforcer, rec *zone.Container) error {
	if err := os.RemoveAll(filepath.Join(e.root, rec.ID)); err != nil {
		return fmt.Errorf("remove state of %s: %w", rec.ID, err)
	}
	if err := removeStaleCgroup(rec.CgroupPath); err != nil {
		return fmt.Errorf("container %s: %w", rec.ID, err)
	}
	return e.release(enf, rec.ID, "", rec)
}
