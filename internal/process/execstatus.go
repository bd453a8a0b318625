package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// execStatusName is the FIFO in the state directory through which the
// Landlock exec shim tells "start" (or "run") that the workload could not
// be executed. runc finds that out before the exec fifo, at create; behind
// the shim the exec happens after it, so it must travel back.
const execStatusName = "exec.status"

// execStatusLimit bounds how long start waits for the shim's word. The
// shim only enters the domain and calls execve; a frozen or stopped init
// is the only way to reach the limit, and then start reports nothing.
const execStatusLimit = 10 * time.Second

// NewExecStatus makes the FIFO in dir and returns an end the container's
// init writes to. The caller closes its copy once the init has it.
func NewExecStatus(dir string) (*os.File, error) {
	path := filepath.Join(dir, execStatusName)
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("make %s: %w", path, err)
	}
	// O_RDWR opens a FIFO without waiting for a reader.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

// DiscardExecStatus removes a status FIFO that no process was given.
func DiscardExecStatus(f *os.File) {
	os.Remove(f.Name())
	f.Close()
}

// ExecStatusReader is the reading end, opened before the init is let go:
// what a writer leaves in a FIFO nobody has open is lost.
type ExecStatusReader struct {
	path string
	fd   int
}

// WatchExecStatus opens dir's status FIFO for reading; nil when there is
// none (the workload is not started through the shim).
func WatchExecStatus(dir string) (*ExecStatusReader, error) {
	path := filepath.Join(dir, execStatusName)
	// O_NONBLOCK: the open must not wait for a writer (an init that died
	// holds none); the reads then block until the shim writes or closes.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &ExecStatusReader{path: path, fd: fd}, nil
}

// Wait returns the shim's report as an error once the init has executed
// the workload (nil) or failed to, and removes the FIFO.
func (r *ExecStatusReader) Wait() error {
	defer os.Remove(r.path)
	done := make(chan string, 1)
	go func() {
		defer unix.Close(r.fd)
		var msg []byte
		buf := make([]byte, 512)
		for len(msg) < 4096 {
			n, err := unix.Read(r.fd, buf)
			if err == unix.EINTR {
				continue
			}
			if n <= 0 {
				break // every writer is gone: the exec closed it, or the init died
			}
			msg = append(msg, buf[:n]...)
		}
		done <- strings.TrimSpace(string(msg))
	}()
	select {
	case msg := <-done:
		if msg != "" {
			// runc's words for an entrypoint that cannot be executed.
			return errors.New("unable to start container process: " + msg)
		}
		return nil
	case <-time.After(execStatusLimit):
		return nil
	}
}
