package libzone

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer/utils"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// The commands that only read a container's state or talk to its init
// (state, list, start, kill), and delete of a stopped container, read
// libcontainer's state.json themselves.
// libcontainer.Load decodes the whole config first (encoding/json builds
// its reflection caches for every type of configs.Config, in every
// process), builds the cgroup and RDT managers, and then computes the
// status again for each question: `rauha state` took 17.3 ms with Load and
// takes 12.5 ms without it (hyperfine, this machine; runc 1.1.5: 15.8).
//
// The status follows libcontainer's refreshState: paused when the
// container's freezer says so, stopped when the init (pid and start time)
// is gone or a zombie, created while the exec fifo exists, else running.

// execFifoName is the fifo in the state directory on which libcontainer's
// init waits until start opens it.
const execFifoName = "exec.fifo"

// stateFile is the part of libcontainer's state.json that rauha reads
// itself, and the state directory it came from.
type stateFile struct {
	ID           string            `json:"id"`
	Pid          int               `json:"init_process_pid"`
	StartTime    uint64            `json:"init_process_start"`
	Created      time.Time         `json:"created"`
	Cgroups      map[string]string `json:"cgroup_paths"`
	IntelRdtPath string            `json:"intel_rdt_path"`
	Config       struct {
		Rootfs     string   `json:"rootfs"`
		Labels     []string `json:"labels"`
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
		Cgroups struct {
			Systemd  bool `json:"Systemd"`
			Rootless bool `json:"Rootless"`
		} `json:"cgroups"`
		Hooks    map[string]json.RawMessage `json:"Hooks"`
		IntelRdt json.RawMessage            `json:"intel_rdt"`
	} `json:"config"`

	dir string
}

// readStateFile reads container id's state.json. A container without one
// does not exist, as libcontainer.Load reports it: a create that died
// before saving its state leaves a bare directory.
func (e *Engine) readStateFile(id string) (*stateFile, error) {
	if err := zone.ValidateName("container id", id); err != nil {
		return nil, err
	}
	dir := e.stateDir(id)
	data, err := readFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("container %s does not exist: %w", id, ErrNotExist)
	} else if err != nil {
		return nil, fmt.Errorf("state of %s: %w", id, err)
	}
	sf := &stateFile{dir: dir}
	if err := json.Unmarshal(data, sf); err != nil {
		return nil, fmt.Errorf("state of %s: %s: %w", id, filepath.Join(dir, "state.json"), err)
	}
	if sf.ID != id {
		return nil, fmt.Errorf("state of %s names container %q", id, sf.ID)
	}
	return sf, nil
}

// State returns container id's state as "rauha state" prints it.
func (e *Engine) State(id string) (*State, error) {
	sf, err := e.readStateFile(id)
	if err != nil {
		return nil, err
	}
	status, err := sf.status()
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", id, err)
	}
	pid := sf.Pid
	if status == "stopped" {
		pid = 0
	}
	bundle, annotations := utils.Annotations(sf.Config.Labels)
	// rauha's own bookkeeping in the labels is not the bundle's.
	delete(annotations, deniedLinksLabel)
	delete(annotations, deniedFilesLabel)
	return &State{
		OCIVersion:  specs.Version,
		ID:          sf.ID,
		Pid:         pid,
		Status:      status,
		Bundle:      bundle,
		Rootfs:      sf.Config.Rootfs,
		Created:     sf.Created,
		Annotations: annotations,
		Zone:        zoneOf(sf.ID, annotations),
	}, nil
}

func (sf *stateFile) status() (string, error) {
	frozen, err := sf.frozen()
	if err != nil {
		return "", err
	}
	if frozen {
		return "paused", nil
	}
	if !initAlive(sf.Pid, sf.StartTime) {
		return "stopped", nil
	}
	if _, err := os.Stat(filepath.Join(sf.dir, execFifoName)); err == nil {
		return "created", nil
	}
	return "running", nil
}

// frozen reads the freezer the way libcontainer's cgroup managers do: the
// v1 freezer hierarchy when the container has one, else the unified
// cgroup's cgroup.freeze.
func (sf *stateFile) frozen() (bool, error) {
	if p := sf.Cgroups["freezer"]; p != "" {
		st, err := (&fs.FreezerGroup{}).GetState(p)
		return st == cgroups.Frozen, err
	}
	if p := sf.Cgroups[""]; p != "" {
		v, err := readFile(filepath.Join(p, "cgroup.freeze"))
		if err != nil {
			return false, nil // no freezer, or the cgroup is gone: not paused
		}
		return strings.TrimSpace(string(v)) == "1", nil
	}
	return false, nil
}

// privatePID tells whether the container has a PID namespace of its own,
// as configs.Namespaces.IsPrivate(NEWPID) does.
func (sf *stateFile) privatePID() bool {
	for _, ns := range sf.Config.Namespaces {
		if ns.Type == "NEWPID" {
			return ns.Path == ""
		}
	}
	return false
}

// plainDestroy tells whether removing the container, once stopped, is
// only removing its cgroups and its state directory, as libcontainer's
// destroy (state_linux.go) does when there is nothing more: no process can
// outlive the init (it has a PID namespace of its own), the cgroups are
// cgroupfs directories (no systemd unit), and there is no Intel RDT group
// and no poststop hook.
func (sf *stateFile) plainDestroy() bool {
	c := &sf.Config
	noRDT := sf.IntelRdtPath == "" && (len(c.IntelRdt) == 0 || string(c.IntelRdt) == "null")
	poststop := c.Hooks["poststop"]
	noHooks := len(poststop) == 0 || string(poststop) == "null" || string(poststop) == "[]"
	return sf.privatePID() && !c.Cgroups.Systemd && noRDT && noHooks
}

// destroy removes a stopped container for which plainDestroy holds: its
// cgroup directories (a cgroup manager given the recorded paths removes
// exactly those), then its state directory.
func (sf *stateFile) destroy() error {
	cm, err := manager.NewWithPaths(&cgroups.Cgroup{Resources: &cgroups.Resources{}, Rootless: sf.Config.Cgroups.Rootless}, sf.Cgroups)
	if err != nil {
		return fmt.Errorf("cgroups of %s: %w", sf.ID, err)
	}
	if err := cm.Destroy(); err != nil {
		return fmt.Errorf("unable to remove container's cgroup: %w", err)
	}
	if err := os.RemoveAll(sf.dir); err != nil {
		return fmt.Errorf("unable to remove container state dir: %w", err)
	}
	return nil
}

// execFifo lets the init run the user process, as libcontainer's Exec
// does: the init blocks opening the fifo for writing until start opens it
// for reading, writes one byte and execs. An init that dies first never
// opens it; every 100 ms a non-blocking open finds out whether it wrote
// its byte before it went.
func (sf *stateFile) execFifo() error {
	path := filepath.Join(sf.dir, execFifoName)
	opened := make(chan error, 1)
	go func() { opened <- readExecFifo(path, 0) }()
	for {
		select {
		case err := <-opened:
			return err
		case <-time.After(100 * time.Millisecond):
			if !initAlive(sf.Pid, sf.StartTime) {
				if err := readExecFifo(path, unix.O_NONBLOCK); err != nil {
					return errors.New("container process is already dead")
				}
				return nil
			}
		}
	}
}

// readExecFifo opens the exec fifo, reads what the init wrote and removes
// the fifo: from then on the container counts as running.
func readExecFifo(path string, flags int) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return fmt.Errorf("exec fifo: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(fd)
	var buf [16]byte
	got := 0
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil && err != unix.EAGAIN {
			return fmt.Errorf("exec fifo: %w", &os.PathError{Op: "read", Path: path, Err: err})
		}
		if n <= 0 {
			break
		}
		got += n
	}
	if got == 0 {
		return errors.New("cannot start an already running container")
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// errInitGone is signalInit's report of an init that is no longer there.
var errInitGone = errors.New("the container's init is not running")

// signalInit sends sig to the init through a pidfd: once the pidfd is
// open, a pid that still has the init's start time is the init, and the
// signal cannot reach a process that reused the pid.
func (sf *stateFile) signalInit(sig unix.Signal) error {
	if !initAlive(sf.Pid, sf.StartTime) {
		return errInitGone
	}
	fd, err := unix.PidfdOpen(sf.Pid, 0)
	if err == unix.ESRCH {
		return errInitGone
	} else if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", sf.Pid, err)
	}
	defer unix.Close(fd)
	if !initAlive(sf.Pid, sf.StartTime) {
		return errInitGone
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err == unix.ESRCH {
		return errInitGone
	} else if err != nil {
		return fmt.Errorf("unable to signal init %d: %w", sf.Pid, err)
	}
	return nil
}

// initAlive tells whether pid is still the container's init: same start
// time (field 22 of /proc/pid/stat), and neither a zombie nor dead.
func initAlive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	data, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), so field 22 (starttime) is f[19].
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return err == nil && st == startTime
}

// readFile is os.ReadFile without the runtime poller: an os.File tries to
// register every file with epoll and sets and restores its flags, five
// more calls a file, which list made twice per container.
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
