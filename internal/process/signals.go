// Adapted from runc's signals.go, https://github.com/opencontainers/runc,
// Copyright The runc Authors, Apache License 2.0; modified for Rauha (see
// NOTICE).

package process

import (
	"os"
	"os/signal"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/system"
	"github.com/opencontainers/runc/libcontainer/utils"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// signalBufferSize is large because a burst of SIGCHLDs or forwarded signals
// must not be dropped while the relay is busy.
const signalBufferSize = 2048

type signalRelay struct {
	signals chan os.Signal
	notify  *NotifySocket
}

// newSignalRelay starts catching signals before the process starts, so none
// sent in between is lost. SIGCHLD is registered synchronously; the rest in a
// goroutine because signal.Notify for all signals is slow.
//
// A detached process (create, run -d, exec -d) is given nothing to relay:
// forward returns at once, so catching would only swallow the signals sent
// to rauha itself (runc's create does, because it shares the foreground
// path). Catching would also cost create about 3 ms on two CPUs: each of the
// ~65 signals is a round trip between goroutines on two threads (the
// runtime's signal-mask goroutine is locked to its thread), which holds one
// CPU while the process starts the init.
func newSignalRelay(subreaper, detach bool, notify *NotifySocket) chan *signalRelay {
	if subreaper {
		if err := system.SetSubreaper(1); err != nil {
			logrus.Warn(err)
		}
	}
	ch := make(chan *signalRelay, 1)
	if detach {
		ch <- &signalRelay{notify: notify}
		return ch
	}
	s := make(chan os.Signal, signalBufferSize)
	signal.Notify(s, unix.SIGCHLD)
	go func() {
		signal.Notify(s)
		ch <- &signalRelay{signals: s, notify: notify}
	}()
	return ch
}

// forward relays signals to the process until it exits and returns its exit
// status (128+n after a signal, as a shell reports it).
func (h *signalRelay) forward(p *libcontainer.Process, io *stdio, detach bool) (int, error) {
	if detach && h.notify == nil {
		return 0, nil
	}
	pid1, err := p.Pid()
	if err != nil {
		return -1, err
	}
	if h.notify != nil {
		if detach {
			_ = h.notify.Run(pid1)
			return 0, nil
		}
		_ = h.notify.Run(os.Getpid())
		go func() { _ = h.notify.Run(0) }()
	}
	io.resize()
	for s := range h.signals {
		switch s {
		case unix.SIGWINCH:
			io.resize()
		case unix.SIGCHLD:
			for _, e := range reap() {
				if e.pid == pid1 {
					_, _ = p.Wait()
					return e.status, nil
				}
			}
		case unix.SIGURG:
			// The Go runtime preempts goroutines with SIGURG; it is not for
			// the container.
		default:
			if err := p.Signal(s); err != nil {
				logrus.Debugf("forward signal %v: %v", s, err)
			}
		}
	}
	return -1, nil
}

type exitStatus struct{ pid, status int }

func reap() (exits []exitStatus) {
	var ws unix.WaitStatus
	var rus unix.Rusage
	for {
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &rus)
		if err != nil || pid <= 0 {
			return exits
		}
		exits = append(exits, exitStatus{pid: pid, status: utils.ExitStatus(ws)})
	}
}
