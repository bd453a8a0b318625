// Adapted from runc's notify_socket.go,
// https://github.com/opencontainers/runc, Copyright The runc Authors, Apache
// License 2.0; modified for Rauha (see NOTICE).

package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// NotifySocket passes sd_notify READY messages from the container to the
// caller's NOTIFY_SOCKET (systemd, podman's sdnotify), as runc does: the
// container gets its own socket at /run/notify/notify.sock, and rauha relays
// READY= plus MAINPID=<container init> to the host socket.
type NotifySocket struct {
	socket     *net.UnixConn
	host       string
	socketPath string
}

const notifyDirInContainer = "/run/notify"

// NewNotifySocket prepares the relay to the caller's socket host (the
// NOTIFY_SOCKET rauha was given); nil without one. The container's socket
// is in stateDir.
func NewNotifySocket(stateDir, host string) *NotifySocket {
	if host == "" {
		return nil
	}
	return &NotifySocket{host: host, socketPath: filepath.Join(stateDir, "notify", "notify.sock")}
}

// SetupSpec bind-mounts the container's socket directory into spec and
// points the process's NOTIFY_SOCKET at it.
func (s *NotifySocket) SetupSpec(spec *specs.Spec) {
	spec.Mounts = append(spec.Mounts, specs.Mount{
		Destination: notifyDirInContainer,
		Source:      filepath.Dir(s.socketPath),
		Options:     []string{"bind", "nosuid", "noexec", "nodev", "ro"},
	})
	spec.Process.Env = append(spec.Process.Env, "NOTIFY_SOCKET="+filepath.Join(notifyDirInContainer, filepath.Base(s.socketPath)))
}

// SetupDir makes the directory of the container's socket.
func (s *NotifySocket) SetupDir() error {
	if err := os.Mkdir(filepath.Dir(s.socketPath), 0o755); err != nil {
		return fmt.Errorf("notify socket directory: %w", err)
	}
	return nil
}

// Bind creates the container's socket.
func (s *NotifySocket) Bind() error {
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.socketPath, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify socket: %w", err)
	}
	// The container's user may be anyone: the socket must be writable for it.
	if err := os.Chmod(s.socketPath, 0o777); err != nil {
		sock.Close()
		return fmt.Errorf("notify socket: %w", err)
	}
	s.socket = sock
	return nil
}

// Close closes the container's socket; s may be nil.
func (s *NotifySocket) Close() {
	if s != nil && s.socket != nil {
		s.socket.Close()
	}
}

// Run waits for READY= from the container and passes it on with MAINPID,
// returning early if pid1 exits first.
func (s *NotifySocket) Run(pid1 int) error {
	if s.socket == nil {
		return nil
	}
	client, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: s.host, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("connect to NOTIFY_SOCKET %s: %w", s.host, err)
	}
	defer client.Close()
	ready := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := s.socket.Read(buf)
			if err != nil {
				return
			}
			for _, line := range bytes.Split(buf[:n], []byte{'\n'}) {
				if bytes.HasPrefix(line, []byte("READY=")) {
					ready <- append([]byte(nil), line...)
					return
				}
			}
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if pid1 > 0 {
				if _, err := os.Stat("/proc/" + strconv.Itoa(pid1)); err != nil {
					return nil
				}
			}
		case line := <-ready:
			if _, err := client.Write(append(line, '\n')); err != nil {
				return err
			}
			if _, err := client.Write([]byte("MAINPID=" + strconv.Itoa(pid1) + "\n")); err != nil {
				return err
			}
			return notifyBarrier(client)
		}
	}
}

// notifyBarrier implements sd_notify_barrier: the receiver closes the pipe
// we send once it has processed our earlier messages.
func notifyBarrier(client *net.UnixConn) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cf, err := client.File()
	if err != nil {
		w.Close()
		return err
	}
	defer cf.Close()
	err = unix.Sendmsg(int(cf.Fd()), []byte("BARRIER=1"), unix.UnixRights(int(w.Fd())), nil, 0)
	w.Close()
	if err != nil {
		return err
	}
	_ = r.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b [1]byte
	n, err := r.Read(b[:])
	switch {
	case n != 0 || err == nil:
		return errors.New("notify barrier: unexpected data on the barrier pipe")
	case errors.Is(err, io.EOF):
		return nil // the receiver processed our messages and closed its end
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil // the receiver does not implement barriers; nothing to wait for
	default:
		return fmt.Errorf("notify barrier: %w", err)
	}
}
