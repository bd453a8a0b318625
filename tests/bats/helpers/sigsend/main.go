// sigsend sends a signal by a route other than kill(2), for tests of the
// signal boundary between zones:
//
//	sigsend pidfd PID SIG      pidfd_open + pidfd_send_signal
//	sigsend sigqueue PID SIG   rt_sigqueueinfo, as sigqueue(3) calls it
//	sigsend sigio PID [SIG]    a pipe owned by PID (F_SETOWN), O_ASYNC, one
//	                           byte written: the kernel signals SIGIO, or
//	                           SIG set with F_SETSIG, within the write
//	sigsend sigurg PID         a TCP connection on 127.0.0.1 whose receiving
//	                           socket is owned by PID gets one byte of
//	                           urgent data (MSG_OOB): SIGURG
//
// For sigio and sigurg the sender cannot tell whether the kernel delivered
// the signal (a refused one is dropped silently): the target has to say.
// Prints "ok" and exits 0 when the calls succeed; else prints the errno's
// name (EPERM, ESRCH, ...) and the call and exits 1.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: sigsend pidfd|sigqueue|sigio|sigurg PID [SIG]")
		os.Exit(2)
	}
	pid, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sigsend: PID:", err)
		os.Exit(2)
	}
	sig := 0
	if len(os.Args) > 3 {
		if sig, err = strconv.Atoi(os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "sigsend: SIG:", err)
			os.Exit(2)
		}
	}
	switch os.Args[1] {
	case "pidfd":
		err = pidfdSend(pid, sig)
	case "sigqueue":
		info := unix.Siginfo{Signo: int32(sig), Code: -1} // SI_QUEUE
		if _, _, errno := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(&info))); errno != 0 {
			err = fmt.Errorf("rt_sigqueueinfo: %w", errno)
		}
	case "sigio":
		err = sigio(pid, sig)
	case "sigurg":
		err = sigurg(pid)
	default:
		fmt.Fprintf(os.Stderr, "sigsend: unknown route %q\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Println(unix.ErrnoName(errno))
		}
		fmt.Fprintln(os.Stderr, "sigsend:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func pidfdSend(pid, sig int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, syscall.Signal(sig), nil, 0); err != nil {
		return fmt.Errorf("pidfd_send_signal: %w", err)
	}
	return nil
}

func sigio(pid, sig int) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, pid); err != nil {
		return fmt.Errorf("F_SETOWN: %w", err)
	}
	if sig != 0 {
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, sig); err != nil {
			return fmt.Errorf("F_SETSIG: %w", err)
		}
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC); err != nil {
		return fmt.Errorf("O_ASYNC: %w", err)
	}
	if _, err := unix.Write(p[1], []byte("x")); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// sigurg waits (poll POLLPRI) until the urgent byte has arrived: the
// kernel signals when it sees the urgent pointer, before that.
func sigurg(pid int) error {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(l, 1); err != nil {
		return err
	}
	sa, err := unix.Getsockname(l)
	if err != nil {
		return err
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(c)
	if err := unix.Connect(c, sa); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	a, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	defer unix.Close(a)
	if _, err := unix.FcntlInt(uintptr(a), unix.F_SETOWN, pid); err != nil {
		return fmt.Errorf("F_SETOWN: %w", err)
	}
	if err := unix.Sendto(c, []byte("!"), unix.MSG_OOB, nil); err != nil {
		return fmt.Errorf("send MSG_OOB: %w", err)
	}
	fds := []unix.PollFd{{Fd: int32(a), Events: unix.POLLPRI}}
	if n, err := unix.Poll(fds, 5000); err != nil || n != 1 {
		return fmt.Errorf("no urgent data arrived (poll: %d, %v)", n, err)
	}
	return nil
}
