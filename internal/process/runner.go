// Adapted from runc's utils_linux.go (runner, createPidFile),
// https://github.com/opencontainers/runc, Copyright The runc Authors, Apache
// License 2.0; modified for Rauha (see NOTICE).

package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// IOOptions are the runc flags that decide how a process is wired to the
// caller.
type IOOptions struct {
	Detach        bool   // return once the process runs, do not wait for it
	ConsoleSocket string // where to send the pty master (with a terminal and Detach)
	PidfdSocket   string // where to send a pidfd of the process
	PidFile       string // write the process's host pid here
	PreserveFDs   int    // pass fds 3..3+N-1 on to the process
	NoSubreaper   bool   // do not become the subreaper of the process's children
}

// Action is what Runner.Run does with its process.
type Action int

const (
	ActCreate Action = iota // start the init, leave it waiting on the exec fifo
	ActRun                  // start the init, then let it run
	ActExec                 // start an additional process in a running container
)

// Runner starts one process of a container and, in the foreground, relays
// its stdio and signals until it exits.
type Runner struct {
	Container *libcontainer.Container
	Action    Action
	IO        IOOptions
	StateDir  string // the container's state directory (ActRun)
	Notify    *NotifySocket
	// Ready runs once the process exists and before it executes user code:
	// for an init, while it waits on the exec fifo. It is where the zone
	// takes hold of the container.
	Ready func(pid int) error
	// Started runs once the container's user process runs (ActRun only):
	// the poststart hooks.
	Started func() error
	// Prepare may change the process before it starts (exec enforcement).
	Prepare func(p *libcontainer.Process) (release func(), err error)
}

// Run starts spec as the container's process and returns its exit status in
// the foreground, 0 when detached. An init gets the socket-activation fds
// passed to rauha.
func (r *Runner) Run(spec *specs.Process) (int, error) {
	var listenFDs []*os.File
	if r.Action != ActExec {
		listenFDs = socketActivationFiles()
	}
	detach := r.IO.Detach || r.Action == ActCreate
	if detach && spec.Terminal && r.IO.ConsoleSocket == "" {
		return -1, errors.New("a terminal was requested with --detach (or create) but no --console-socket was given to send it to")
	}
	if (!detach || !spec.Terminal) && r.IO.ConsoleSocket != "" {
		return -1, errors.New("--console-socket needs a terminal (process.terminal=true) and a detached process")
	}
	p, err := newProcess(spec)
	if err != nil {
		return -1, err
	}
	p.LogLevel = strconv.Itoa(int(logrus.GetLevel()))
	p.Init = r.Action != ActExec
	if len(listenFDs) > 0 {
		p.Env = append(p.Env, "LISTEN_FDS="+strconv.Itoa(len(listenFDs)), "LISTEN_PID=1")
		p.ExtraFiles = append(p.ExtraFiles, listenFDs...)
	}
	base := 3 + len(p.ExtraFiles)
	for fd := base; fd < base+r.IO.PreserveFDs; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return -1, fmt.Errorf("--preserve-fds=%d: fd %d is not open", r.IO.PreserveFDs, fd)
		}
		p.ExtraFiles = append(p.ExtraFiles, os.NewFile(uintptr(fd), "preserved-fd-"+strconv.Itoa(fd)))
	}
	if r.Prepare != nil {
		release, err := r.Prepare(p)
		if err != nil {
			return -1, err
		}
		defer release()
	}
	if r.IO.PidfdSocket != "" {
		sock, err := dialUnix(r.IO.PidfdSocket)
		if err != nil {
			return -1, fmt.Errorf("--pidfd-socket: %w", err)
		}
		// libcontainer's init sends the pidfd over it (SCM_RIGHTS).
		defer sock.Close()
		p.PidfdSocket = sock
	}
	relay := newSignalRelay(!r.IO.NoSubreaper, detach, r.Notify)
	io, err := setupIO(p, r.Container, spec.Terminal, detach, r.IO.ConsoleSocket)
	if err != nil {
		return -1, err
	}
	defer io.Close()

	if r.Action == ActExec {
		err = r.Container.Run(p)
	} else {
		err = r.Container.Start(p)
	}
	if err != nil {
		return -1, err
	}
	if err := io.waitConsole(); err != nil {
		terminate(p)
		return -1, err
	}
	io.closePostStart()
	pid, err := p.Pid()
	if err != nil {
		terminate(p)
		return -1, err
	}
	if r.Ready != nil {
		if err := r.Ready(pid); err != nil {
			terminate(p)
			return -1, err
		}
	}
	if r.IO.PidFile != "" {
		if err := writePidFile(r.IO.PidFile, pid); err != nil {
			terminate(p)
			return -1, err
		}
	}
	if r.Action == ActRun {
		status, err := WatchExecStatus(r.StateDir)
		if err != nil {
			terminate(p)
			return -1, err
		}
		if err := r.Container.Exec(); err != nil {
			terminate(p)
			return -1, fmt.Errorf("start the container process: %w", err)
		}
		if status != nil {
			if err := status.Wait(); err != nil {
				terminate(p)
				return -1, err
			}
		}
		if r.Started != nil {
			if err := r.Started(); err != nil {
				terminate(p)
				return -1, err
			}
		}
	}
	h := <-relay
	status, err := h.forward(p, io, detach)
	if err != nil {
		terminate(p)
	}
	if detach {
		return 0, nil
	}
	return status, err
}

func terminate(p *libcontainer.Process) {
	_ = p.Signal(unix.SIGKILL)
	_, _ = p.Wait()
}

// writePidFile writes pid atomically: a reader never sees a partial file.
func writePidFile(path string, pid int) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path))
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_SYNC, 0o666)
	if err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	_, err = f.WriteString(strconv.Itoa(pid))
	f.Close()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pid file: %w", err)
	}
	return nil
}

// socketActivationFiles are the fds systemd-style socket activation passed
// to rauha (LISTEN_FDS from fd 3 on, for LISTEN_PID), to be passed on to the
// container's init, as runc does. go-systemd's activation package does the
// same, but importing it links crypto/tls into every rauha call (3 MB of
// binary and its package initialisers on each start).
func socketActivationFiles() []*os.File {
	defer func() {
		os.Unsetenv("LISTEN_PID")
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_FDNAMES")
	}()
	if pid, err := strconv.Atoi(os.Getenv("LISTEN_PID")); err != nil || pid != os.Getpid() {
		return nil
	}
	n, err := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	if err != nil || n <= 0 {
		return nil
	}
	names := strings.Split(os.Getenv("LISTEN_FDNAMES"), ":")
	files := make([]*os.File, 0, n)
	for i := range n {
		fd := listenFDsStart + i
		unix.CloseOnExec(fd)
		name := "LISTEN_FD_" + strconv.Itoa(fd)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		files = append(files, os.NewFile(uintptr(fd), name))
	}
	return files
}

// listenFDsStart is SD_LISTEN_FDS_START: the first socket-activation fd.
const listenFDsStart = 3
