package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// The network load: "netserve ADDR" listens in a network namespace of the
// bench (scripts/bench.sh starts it there), and "netclient ..." runs inside
// the container, in a second namespace of the bench joined to the first by
// a veth pair. The first byte of each connection names the exchange:
const (
	modeBulk    = 'B' // the client sends until it shuts down its side; the server answers the byte count
	modeRequest = 'R' // requests of reqSize bytes, each answered with reqSize bytes, until EOF
	modeOnce    = 'O' // one request, one answer, then the server closes
)

// reqSize is the size of a request and of its answer: one small segment
// each way, so the loops measure per-packet and per-connection costs.
const reqSize = 64

// runNetServe is "netserve ADDR": accept connections until killed.
func runNetServe(args []string) error {
	if len(args) != 1 {
		return errors.New("netserve: want ADDR (host:port)")
	}
	ln, err := net.Listen("tcp4", args[0])
	if err != nil {
		return fmt.Errorf("netserve: %w", err)
	}
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("netserve: accept: %w", err)
		}
		go serveConn(c.(*net.TCPConn))
	}
}

func serveConn(c *net.TCPConn) {
	defer c.Close()
	_ = c.SetNoDelay(true)
	mode := make([]byte, 1)
	if _, err := io.ReadFull(c, mode); err != nil {
		return
	}
	switch mode[0] {
	case modeBulk:
		n, err := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
		if err != nil {
			return
		}
		var out [8]byte
		binary.BigEndian.PutUint64(out[:], uint64(n))
		_, _ = c.Write(out[:])
	case modeRequest, modeOnce:
		buf := make([]byte, reqSize)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil || mode[0] == modeOnce {
				return
			}
		}
	}
}

// netResult is what one exchange measured: its rate (wall time) and the
// client's CPU time per unit (user + system, µs). The CPU time holds the
// egress programs' cost (they run in the sender's context) and varies less
// with other load on the host than the rate.
type netResult struct {
	Rate      float64 `json:"rate"`       // MB/s, req/s or conn/s
	CPU       float64 `json:"cpu_us_per"` // per MB, request or connection
	DeniedErr string  `json:"denied_err"` // how a connect the zone's rules do not allow ended
}

// netExchanges are the client's exchanges, by name: each returns units per
// second; unit is the size of one count in units.
var netExchanges = map[string]struct {
	fn   func(*syscall.SockaddrInet4, int) (float64, error)
	unit float64
}{
	"bulk":        {bulkSend, float64(1<<20) / 1e6}, // count MiB, units MB
	"requests":    {requestLoop, 1},
	"connections": {connLoop, 1},
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runNetClient is "netclient ADDR EXCHANGE COUNT DENIED_ADDR": one
// exchange with the listener at ADDR (bulk: send COUNT MiB; requests:
// COUNT request/answer round trips over one connection; connections: COUNT
// connections with one request each), then one connect to DENIED_ADDR (the
// listener's host, a port no rule allows) whose outcome tells the bench the
// rules were in force. The client uses blocking syscalls, not Go's
// netpoller, so what it times is the kernel's path. JSON on stdout.
func runNetClient(args []string) error {
	if len(args) != 4 {
		return errors.New("netclient: want ADDR EXCHANGE COUNT DENIED_ADDR")
	}
	addr, err := sockaddr(args[0])
	if err != nil {
		return err
	}
	ex, ok := netExchanges[args[1]]
	if !ok {
		return fmt.Errorf("netclient: no exchange %q", args[1])
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 1 {
		return fmt.Errorf("netclient: bad count %q", args[2])
	}
	denied, err := sockaddr(args[3])
	if err != nil {
		return err
	}
	var r netResult
	c0 := cpuTime()
	if r.Rate, err = ex.fn(addr, n); err != nil {
		return fmt.Errorf("netclient: %s: %w", args[1], err)
	}
	r.CPU = float64((cpuTime() - c0).Nanoseconds()) / 1e3 / (float64(n) * ex.unit)
	r.DeniedErr = "none"
	if fd, err := dial(denied); err != nil {
		r.DeniedErr = errnoName(err)
	} else {
		syscall.Close(fd)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func sockaddr(s string) (*syscall.SockaddrInet4, error) {
	a, err := net.ResolveTCPAddr("tcp4", s)
	if err != nil || a.IP.To4() == nil {
		return nil, fmt.Errorf("netclient: address %q: want IPv4:port", s)
	}
	sa := &syscall.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	return sa, nil
}

func errnoName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		switch e {
		case syscall.EPERM:
			return "EPERM"
		case syscall.EACCES:
			return "EACCES"
		case syscall.ECONNREFUSED:
			return "ECONNREFUSED"
		}
	}
	return err.Error()
}

// dial connects a blocking TCP socket with Nagle off.
func dial(sa *syscall.SockaddrInet4) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("connect: %w", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("TCP_NODELAY: %w", err)
	}
	return fd, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return fmt.Errorf("write: %w", err)
		}
		b = b[n:]
	}
	return nil
}

func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Read(fd, b)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b = b[n:]
	}
	return nil
}

// bulkSend sends mib MiB and returns MB/s (10^6 bytes), timed from the
// connect to the server's count, so every byte has arrived.
func bulkSend(sa *syscall.SockaddrInet4, mib int) (float64, error) {
	t0 := time.Now()
	fd, err := dial(sa)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	if err := writeAll(fd, []byte{modeBulk}); err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	for i := 0; i < mib; i++ {
		if err := writeAll(fd, buf); err != nil {
			return 0, err
		}
	}
	if err := syscall.Shutdown(fd, syscall.SHUT_WR); err != nil {
		return 0, fmt.Errorf("shutdown: %w", err)
	}
	var got [8]byte
	if err := readFull(fd, got[:]); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if n := binary.BigEndian.Uint64(got[:]); n != uint64(mib)<<20 {
		return 0, fmt.Errorf("the server received %d bytes of %d", n, mib<<20)
	}
	return float64(mib<<20) / 1e6 / d.Seconds(), nil
}

// requestLoop does n round trips of reqSize bytes over one connection.
func requestLoop(sa *syscall.SockaddrInet4, n int) (float64, error) {
	fd, err := dial(sa)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, reqSize)
	if err := writeAll(fd, []byte{modeRequest}); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := writeAll(fd, buf); err != nil {
			return 0, err
		}
		if err := readFull(fd, buf); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// connLoop makes n connections, each with one request: connect, request,
// answer, the server's close, close. The server closes first, so the
// TIME_WAIT sockets are its own and never use up the client's ports.
func connLoop(sa *syscall.SockaddrInet4, n int) (float64, error) {
	req := make([]byte, 1+reqSize)
	req[0] = modeOnce
	ans := make([]byte, reqSize+1)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		fd, err := dial(sa)
		if err != nil {
			return 0, err
		}
		err = writeAll(fd, req)
		if err == nil {
			err = readFull(fd, ans[:reqSize])
		}
		if err == nil {
			// the server's close: EOF
			var k int
			if k, err = syscall.Read(fd, ans[reqSize:]); err == nil && k != 0 {
				err = errors.New("answer longer than a request")
			}
		}
		syscall.Close(fd)
		if err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}
