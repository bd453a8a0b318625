package libzone

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/runc/libcontainer/utils"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// List returns the state of every container under the engine's root, in
// directory order, with Owner filled in (as "runc list" shows it).
//
// It reads each container's state.json itself rather than loading the
// container through libcontainer: Load decodes the whole config, builds a
// cgroup manager and computes the status, and State computes it twice
// more, which made list take 0.6 ms per container (over 300 ms at 500).
// The status follows libcontainer's refreshState: paused when the
// container's freezer says so, stopped when the init (pid and start time)
// is gone or a zombie, created while the exec fifo exists, else running.
func (e *Engine) List() ([]State, error) {
	entries, err := os.ReadDir(e.root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // a fresh root has no containers
		}
		return nil, fmt.Errorf("list containers in %s: %w", e.root, err)
	}
	var dirs []os.DirEntry
	for _, ent := range entries {
		if ent.IsDir() {
			dirs = append(dirs, ent)
		}
	}
	// Each container costs a handful of system calls and a JSON decode:
	// read them on every CPU (500 containers: 102 ms on one CPU, 75 on two).
	states := make([]*State, len(dirs))
	uids := make([]int64, len(dirs))
	eachParallel(len(dirs), func(i int) {
		st, err := e.listed(dirs[i].Name())
		if err != nil {
			// A create that died before writing its state leaves a bare
			// directory: not a container, and not worth failing the list.
			logrus.Debugf("list: skip %s: %v", dirs[i].Name(), err)
			return
		}
		uids[i] = -1
		if fi, err := dirs[i].Info(); err == nil {
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
				uids[i] = int64(sys.Uid)
			}
		}
		states[i] = st
	})
	var out []State
	owners := map[uint32]string{}
	for i, st := range states {
		if st == nil {
			continue
		}
		if uids[i] >= 0 {
			st.Owner = ownerName(owners, uint32(uids[i]))
		}
		out = append(out, *st)
	}
	return out, nil
}

// eachParallel calls fn(0) … fn(n-1) on up to GOMAXPROCS goroutines; a
// short list is not worth starting them.
func eachParallel(n int, fn func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n/16)
	if workers < 2 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// listedState is the part of libcontainer's state.json that list shows.
type listedState struct {
	ID        string            `json:"id"`
	Pid       int               `json:"init_process_pid"`
	StartTime uint64            `json:"init_process_start"`
	Created   time.Time         `json:"created"`
	Cgroups   map[string]string `json:"cgroup_paths"`
	Config    struct {
		Rootfs string   `json:"rootfs"`
		Labels []string `json:"labels"`
	} `json:"config"`
}

func (e *Engine) listed(id string) (*State, error) {
	if err := zone.ValidateName("container id", id); err != nil {
		return nil, err
	}
	dir := filepath.Join(e.root, id)
	data, err := readFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, err
	}
	var ls listedState
	if err := json.Unmarshal(data, &ls); err != nil {
		return nil, fmt.Errorf("state of %s: %w", id, err)
	}
	if ls.ID != id {
		return nil, fmt.Errorf("state of %s names container %q", id, ls.ID)
	}
	status, err := listedStatus(dir, &ls)
	if err != nil {
		return nil, err
	}
	pid := ls.Pid
	if status == "stopped" {
		pid = 0
	}
	bundle, annotations := utils.Annotations(ls.Config.Labels)
	return &State{
		OCIVersion:  specs.Version,
		ID:          ls.ID,
		Pid:         pid,
		Status:      status,
		Bundle:      bundle,
		Rootfs:      ls.Config.Rootfs,
		Created:     ls.Created,
		Annotations: annotations,
		Zone:        zoneOf(ls.ID, annotations),
	}, nil
}

func listedStatus(dir string, ls *listedState) (string, error) {
	frozen, err := listedFrozen(ls.Cgroups)
	if err != nil {
		return "", err
	}
	if frozen {
		return "paused", nil
	}
	if !initAlive(ls.Pid, ls.StartTime) {
		return "stopped", nil
	}
	if _, err := os.Stat(filepath.Join(dir, "exec.fifo")); err == nil {
		return "created", nil
	}
	return "running", nil
}

// listedFrozen reads the freezer the way libcontainer's cgroup managers
// do: the v1 freezer hierarchy when the container has one, else the
// unified cgroup's cgroup.freeze.
func listedFrozen(paths map[string]string) (bool, error) {
	if p := paths["freezer"]; p != "" {
		st, err := (&fs.FreezerGroup{}).GetState(p)
		return st == cgroups.Frozen, err
	}
	if p := paths[""]; p != "" {
		v, err := readFile(filepath.Join(p, "cgroup.freeze"))
		if err != nil {
			return false, nil // no freezer, or the cgroup is gone: not paused
		}
		return strings.TrimSpace(string(v)) == "1", nil
	}
	return false, nil
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

func ownerName(cache map[uint32]string, uid uint32) string {
	if n, ok := cache[uid]; ok {
		return n
	}
	n := "#" + strconv.Itoa(int(uid))
	if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
		n = u.Username
	}
	cache[uid] = n
	return n
}
