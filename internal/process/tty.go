// Adapted from runc's tty.go, utils_linux.go (setupIO) and
// internal/cmsg/cmsg.go (RecvFile), https://github.com/opencontainers/runc,
// Copyright The runc Authors, Apache License 2.0; modified for Rauha (see
// NOTICE).

package process

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"

	"github.com/containerd/console"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"
)

// stdio wires a container process to rauha's own stdio: inherited, through
// pipes, through a pty rauha relays, or through a pty handed to the caller's
// console socket.
type stdio struct {
	epoller     *console.Epoller
	console     *console.EpollConsole
	hostConsole console.Console
	raw         bool // hostConsole was put in raw mode and must be reset
	closers     []io.Closer
	postStart   []io.Closer // our copies of what the child now holds
	wg          sync.WaitGroup
	consoleC    chan error
}

// setupIO prepares p's stdio. With a terminal and detach, the pty master goes
// to consoleSocket (the SCM_RIGHTS protocol runc uses); without detach rauha
// relays the pty itself. Detached processes inherit rauha's stdio; foreground
// ones get pipes owned by the container's root user.
func setupIO(p *libcontainer.Process, c *libcontainer.Container, terminal, detach bool, consoleSocket string) (_ *stdio, retErr error) {
	if terminal {
		p.Stdin, p.Stdout, p.Stderr = nil, nil, nil
		t := &stdio{}
		if !detach {
			if err := t.initHostConsole(); err != nil {
				return nil, err
			}
			parent, child, err := utils.NewSockPair("console")
			if err != nil {
				return nil, fmt.Errorf("console socket pair: %w", err)
			}
			p.ConsoleSocket = child
			t.postStart = append(t.postStart, parent, child)
			t.consoleC = make(chan error, 1)
			go func() { t.consoleC <- t.relayConsole(parent) }()
			return t, nil
		}
		sock, err := dialUnix(consoleSocket)
		if err != nil {
			return nil, fmt.Errorf("console socket: %w", err)
		}
		t.postStart = append(t.postStart, sock)
		p.ConsoleSocket = sock
		return t, nil
	}
	if detach {
		p.Stdin, p.Stdout, p.Stderr = os.Stdin, os.Stdout, os.Stderr
		return &stdio{}, nil
	}
	cfg := c.Config()
	uid, err := cfg.HostRootUID()
	if err != nil {
		return nil, err
	}
	gid, err := cfg.HostRootGID()
	if err != nil {
		return nil, err
	}
	pio, err := p.InitializeIO(uid, gid)
	if err != nil {
		return nil, fmt.Errorf("stdio pipes: %w", err)
	}
	t := &stdio{closers: []io.Closer{pio.Stdin, pio.Stdout, pio.Stderr}}
	for _, s := range []any{p.Stdin, p.Stdout, p.Stderr} {
		if cl, ok := s.(io.Closer); ok {
			t.postStart = append(t.postStart, cl)
		}
	}
	go func() {
		_, _ = io.Copy(pio.Stdin, os.Stdin)
		_ = pio.Stdin.Close()
	}()
	t.wg.Add(2)
	go t.copy(os.Stdout, pio.Stdout)
	go t.copy(os.Stderr, pio.Stderr)
	return t, nil
}

func (t *stdio) copy(w io.Writer, r io.ReadCloser) {
	defer t.wg.Done()
	_, _ = io.Copy(w, r)
	_ = r.Close()
}

func (t *stdio) initHostConsole() error {
	for _, f := range []*os.File{os.Stderr, os.Stdout, os.Stdin} {
		c, err := console.ConsoleFromFile(f)
		if err == nil {
			t.hostConsole = c
			return nil
		}
		if !errors.Is(err, console.ErrNotAConsole) {
			return fmt.Errorf("host console: %w", err)
		}
	}
	// None of our stdio is a terminal: fall back to the controlling one.
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return fmt.Errorf("a terminal was requested but rauha has none (stdio is not a tty and /dev/tty: %w); use --detach with --console-socket", err)
	}
	c, err := console.ConsoleFromFile(tty)
	if err != nil {
		return fmt.Errorf("host console: %w", err)
	}
	t.hostConsole = c
	return nil
}

// relayConsole receives the container's pty master and copies it to and
// from rauha's own terminal.
func (t *stdio) relayConsole(sock *os.File) (retErr error) {
	f, err := recvFile(sock)
	if err != nil {
		return err
	}
	cons, err := console.ConsoleFromFile(f)
	if err != nil {
		return err
	}
	if err := console.ClearONLCR(cons.Fd()); err != nil {
		return err
	}
	ep, err := console.NewEpoller()
	if err != nil {
		return err
	}
	ec, err := ep.Add(cons)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = ec.Close()
		}
	}()
	go func() { _ = ep.Wait() }()
	// A process outside the terminal's foreground process group that reads
	// it or changes its modes gets SIGTTIN/SIGTTOU: it would stop (or, with
	// the signal caught for forwarding, retry forever). Such a background
	// rauha, e.g. under `sh -c "timeout 30 rauha run"`, leaves the terminal
	// alone and only relays the container's output.
	if !inBackground(os.Stdin) {
		go func() { _, _ = io.Copy(ec, os.Stdin) }()
	}
	t.wg.Add(1)
	go t.copy(os.Stdout, ec)
	if !inBackground(t.hostConsole) {
		if err := t.hostConsole.SetRaw(); err != nil {
			return fmt.Errorf("set the host terminal raw: %w", err)
		}
		t.raw = true
		go func() {
			// In raw mode ^C reaches the container, but a SIGINT sent to rauha
			// itself must still leave the user's terminal usable.
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, os.Interrupt)
			<-ch
			_ = t.hostConsole.Reset()
			os.Exit(0)
		}()
	}
	t.epoller, t.console = ep, ec
	t.closers = []io.Closer{ec}
	return nil
}

func (t *stdio) waitConsole() error {
	if t.consoleC != nil {
		return <-t.consoleC
	}
	return nil
}

// closePostStart drops our copies of the fds the child now owns, so EOF and
// hang-ups propagate.
func (t *stdio) closePostStart() {
	for _, c := range t.postStart {
		_ = c.Close()
	}
}

func (t *stdio) Close() {
	t.closePostStart()
	if t.console != nil && t.epoller != nil {
		_ = t.console.Shutdown(t.epoller.CloseConsole)
	}
	t.wg.Wait()
	for _, c := range t.closers {
		_ = c.Close()
	}
	if t.raw {
		_ = t.hostConsole.Reset()
	}
}

func (t *stdio) resize() {
	if t.console != nil && t.hostConsole != nil {
		_ = t.console.ResizeFrom(t.hostConsole)
	}
}

// inBackground reports whether f is a terminal whose foreground process
// group is not ours.
func inBackground(f interface{ Fd() uintptr }) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp != unix.Getpgrp()
}

// dialUnix connects to the AF_UNIX socket at path, for libcontainer to send
// a file over (the pty master, a pidfd).
func dialUnix(path string) (*os.File, error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	defer conn.Close()
	f, err := conn.(*net.UnixConn).File()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// recvFile receives one file descriptor over a unix socket (SCM_RIGHTS).
func recvFile(sock *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	var (
		n, oobn int
		err     error
	)
	for {
		n, oobn, _, _, err = unix.Recvmsg(int(sock.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("receive console fd: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive console fd: expected one control message (%d, %v)", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receive console fd: expected one fd (%d, %v)", len(fds), err)
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}
