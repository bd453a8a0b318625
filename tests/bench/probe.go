package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// The probe runs inside a container (the bench copies its own static binary
// into the bundle) and times the operations a zone's enforcement sits on, so
// the same code measures them inside and outside a zone.

// probeResult is one operation's per-call cost, in nanoseconds.
type probeResult struct {
	Op       string  `json:"op"`
	N        int     `json:"n"`
	MedianNs float64 `json:"median_ns"`
	P90Ns    float64 `json:"p90_ns"`
}

// runProbe is "probe N": time N rounds of every operation and print JSON.
func runProbe(args []string) error {
	n := 2000
	if len(args) > 0 {
		v, err := strconv.Atoi(args[0])
		if err != nil {
			return fmt.Errorf("probe: count %q: %w", args[0], err)
		}
		n = v
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("probe: listen on loopback: %w", err)
	}
	defer ln.Close()
	go acceptLoop(ln)
	addr := ln.Addr().(*net.TCPAddr)

	var out []probeResult
	ops := []struct {
		name string
		n    int
		fn   func() error
	}{
		{"open+close", n * 10, openClose},
		{"connect", n, func() error { return connectOnce(addr.Port) }},
		{"fork+exec", n / 10, func() error { return exec.Command("/bin/true").Run() }},
	}
	for _, op := range ops {
		r, err := timeOp(op.name, op.n, op.fn)
		if err != nil {
			return err
		}
		out = append(out, r)
	}
	// A signal to another task of the container: the check that zones add
	// on every kill(2) (Landlock signal scoping, task_kill).
	child := exec.Command("/bin/sleep", "100")
	if err := child.Start(); err != nil {
		return fmt.Errorf("probe: start signal target: %w", err)
	}
	pid := child.Process.Pid
	r, err := timeOp("signal", n*10, func() error { return syscall.Kill(pid, syscall.SIGCONT) })
	_ = child.Process.Kill()
	_ = child.Wait()
	if err != nil {
		return err
	}
	out = append(out, r)
	return json.NewEncoder(os.Stdout).Encode(out)
}

func acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func openClose() error {
	fd, err := syscall.Open("/etc/passwd", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /etc/passwd: %w", err)
	}
	return syscall.Close(fd)
}

// connectOnce connects with raw syscalls, so the figure is the kernel's
// connect path and not Go's netpoller.
func connectOnce(port int) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	sa := &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if err := syscall.Connect(fd, sa); err != nil {
		return fmt.Errorf("connect 127.0.0.1:%d: %w", port, err)
	}
	return nil
}

func timeOp(name string, n int, fn func() error) (probeResult, error) {
	if n < 1 {
		n = 1
	}
	samples := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := fn(); err != nil {
			return probeResult{}, fmt.Errorf("probe %s: %w", name, err)
		}
		samples = append(samples, float64(time.Since(t0).Nanoseconds()))
	}
	sort.Float64s(samples)
	return probeResult{Op: name, N: n, MedianNs: quantile(samples, 0.5), P90Ns: quantile(samples, 0.9)}, nil
}

// runWatch is "watch": connect a UDP socket to 192.0.2.1:9 (TEST-NET-1;
// the private network namespace has no route there, so an allowed connect
// fails with ENETUNREACH and sends nothing) in a loop until the zone
// refuses it with EPERM, then print the wall-clock time (Unix ns) of the
// refused attempt. Loopback would not do: a zone's own loopback is always
// allowed. The bench changes the zone's policy meanwhile and subtracts the
// time it started `rauha zone update`. It gives up after 20 s.
func runWatch() error {
	if denied, err := udpConnectDenied(); err != nil || denied {
		return fmt.Errorf("watch: the first connect must be allowed (denied %v): %w", denied, err)
	}
	fmt.Println("ready")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		t := time.Now().UnixNano()
		denied, err := udpConnectDenied()
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if denied {
			fmt.Println(t)
			return nil
		}
	}
	return errors.New("watch: connect still allowed after 20 s")
}

func udpConnectDenied() (bool, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	err = syscall.Connect(fd, &syscall.SockaddrInet4{Port: 9, Addr: [4]byte{192, 0, 2, 1}})
	switch {
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return true, nil
	case err == nil, errors.Is(err, syscall.ENETUNREACH):
		return false, nil
	}
	return false, fmt.Errorf("connect 192.0.2.1:9: %w", err)
}
