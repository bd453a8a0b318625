package bpf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/internal/uring"
)

// ringOp opens args[0] read-only (IORING_OP_OPENAT) or renames args[0] to
// args[1] (IORING_OP_RENAMEAT) and returns the completion's errno.
func ringOp(rename bool, args []string) error {
	path, addr := uring.CString(args[0])
	e := uring.SQE{Opcode: uring.OpOpenat, Fd: unix.AT_FDCWD, Addr: addr, OpFlags: unix.O_RDONLY | unix.O_CLOEXEC}
	keep := []any{path}
	if rename {
		to, toAddr := uring.CString(args[1])
		cwd := int32(unix.AT_FDCWD)
		e.Opcode, e.OpFlags, e.Len, e.Off = uring.OpRenameat, 0, uint32(cwd), toAddr
		keep = append(keep, to)
	}
	res, err := uring.Do(e, keep...)
	if err != nil {
		return err
	}
	if res < 0 {
		return syscall.Errno(-res)
	}
	if !rename {
		unix.Close(int(res))
	}
	return nil
}

// The test binary doubles as the workload: started with helperEnv set, it
// performs one operation from inside a test cgroup and prints "ok" or the
// errno name. Starting it with clone3(CLONE_INTO_CGROUP) puts it in the
// zone before its first instruction.
const helperEnv = "RAUHA_BPF_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper(os.Args[1:]))
	}
	mountedBefore, _ := isBPFFS(bpffsRoot)
	code := m.Run()
	// Tests mount bpffs through Open when it is missing; leave the host as
	// found unless someone else started using it meanwhile.
	if !mountedBefore {
		if now, _ := isBPFFS(bpffsRoot); now {
			entries, _ := os.ReadDir(bpffsRoot)
			// maps.debug and progs.debug come with every bpffs mount.
			if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return !strings.HasSuffix(e.Name(), ".debug") }) {
				_ = unix.Unmount(bpffsRoot, 0)
			}
		}
	}
	os.Exit(code)
}

func runHelper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no operation")
		return 2
	}
	err := helperOp(args[0], args[1:])
	if err == nil {
		fmt.Println("ok")
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		fmt.Println(unix.ErrnoName(errno))
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper:", err)
	return 2
}

func helperOp(op string, args []string) error {
	switch op {
	case "noop":
		return nil
	case "connect", "connect6", "sendto", "sendto6":
		ap, err := netip.ParseAddrPort(args[0])
		if err != nil {
			return err
		}
		return sockOp(strings.HasPrefix(op, "sendto"), strings.HasSuffix(op, "6"), ap)
	case "connect-loop", "open-loop": // <op>-loop <addr|path>: again and again until stdin closes
		try := func() error {
			fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}
		if op == "connect-loop" {
			ap, err := netip.ParseAddrPort(args[0])
			if err != nil {
				return err
			}
			try = func() error { return sockOp(false, false, ap) }
		}
		stop := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
		fmt.Println("ready")
		outcomes := map[string]int{}
		for {
			select {
			case <-stop:
				fmt.Println(outcomes)
				return nil
			default:
			}
			name := "ok"
			var errno syscall.Errno
			if err := try(); errors.As(err, &errno) {
				name = unix.ErrnoName(errno)
			} else if err != nil {
				return err
			}
			outcomes[name]++
		}
	case "iouring-open", "iouring-rename": // the same through io_uring requests
		return ringOp(op == "iouring-rename", args)
	case "open":
		fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "write": // write <path> <data>: open for writing, then write
		fd, err := unix.Open(args[0], unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(args[1]))
		return err
	case "write-by-handle": // write-by-handle <mount> <cgroup dir> <data>: its cgroup.procs, reached by handle
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, args[1], 0)
		if err != nil {
			return fmt.Errorf("name_to_handle_at %s: %w", args[1], err)
		}
		mfd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", args[0], err)
		}
		defer unix.Close(mfd)
		dir, err := unix.OpenByHandleAt(mfd, h, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(dir)
		fd, err := unix.Openat(dir, "cgroup.procs", unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(args[2]))
		return err
	case "mmap-exec", "mprotect-exec": // map <path> executable, at once or by mprotect
		fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		prot := unix.PROT_READ
		if op == "mmap-exec" {
			prot |= unix.PROT_EXEC
		}
		m, err := unix.Mmap(fd, 0, 4096, prot, unix.MAP_PRIVATE)
		if err != nil {
			return err
		}
		defer unix.Munmap(m)
		if op == "mprotect-exec" {
			return unix.Mprotect(m, unix.PROT_READ|unix.PROT_EXEC)
		}
		return nil
	case "mmap-anon-exec": // an anonymous executable mapping: no file to judge
		m, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err == nil {
			unix.Munmap(m)
		}
		return err
	case "exec": // exec <copy of this binary>: prints "ok" from the new image
		return unix.Exec(args[0], []string{args[0], "noop"}, os.Environ())
	case "kill":
		pid, _ := strconv.Atoi(args[0])
		sig, _ := strconv.Atoi(args[1])
		return unix.Kill(pid, syscall.Signal(sig))
	case "pidfd-kill": // pidfd-kill <pid> <sig>: pidfd_send_signal
		pid, _ := strconv.Atoi(args[0])
		sig, _ := strconv.Atoi(args[1])
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return fmt.Errorf("pidfd_open: %w", err)
		}
		defer unix.Close(fd)
		return unix.PidfdSendSignal(fd, syscall.Signal(sig), nil, 0)
	case "sigqueue": // sigqueue <pid> <sig>: rt_sigqueueinfo, as sigqueue(3) calls it
		pid, _ := strconv.Atoi(args[0])
		sig, _ := strconv.Atoi(args[1])
		info := unix.Siginfo{Signo: int32(sig), Code: -1} // SI_QUEUE
		_, _, errno := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(&info)))
		if errno != 0 {
			return errno
		}
		return nil
	case "sigio", "sigurg": // sigio <pid> <F_SETSIG signal, 0: SIGIO>; sigurg <pid>
		pid, _ := strconv.Atoi(args[0])
		if op == "sigurg" {
			return sigurg(pid)
		}
		sig, _ := strconv.Atoi(args[1])
		return sigio(pid, sig)
	case "sigwatch": // a target that prints the number of each SIGIO, SIGURG, SIGUSR1, SIGPWR it gets
		return sigwatch()
	case "ptrace":
		// The tracer thread must stay the same for the whole session.
		runtime.LockOSThread()
		pid, _ := strconv.Atoi(args[0])
		// Exiting detaches; PTRACE_SEIZE does not stop the tracee.
		return unix.PtraceSeize(pid)
	case "unshare-uts": // needs CAP_SYS_ADMIN in the helper's user namespace
		return unix.Unshare(unix.CLONE_NEWUTS)
	case "in-netns": // in-netns <netns path> <op> <args...>: op in that netns
		runtime.LockOSThread() // the thread stays in it and dies with the helper
		fd, err := unix.Open(args[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		if err := loopbackUp(); err != nil {
			return err
		}
		return helperOp(args[1], args[2:])
	case "raw", "ping", "lsrr": // raw|ping <addr>; lsrr <addr:port> <first hop>
		return packetOp(op, args)
	case "serve": // serve: accept one TCP connection on 127.0.0.1, answer "hi"
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		c, err := l.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("hi"))
		return err
	case "udp-stream": // udp-stream <addr:port>: a connected UDP socket; one datagram per line of stdin
		ap, err := netip.ParseAddrPort(args[0])
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
			return err
		}
		fmt.Println("ready")
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			name := "ok"
			var errno syscall.Errno
			if _, err := unix.Write(fd, lines.Bytes()); errors.As(err, &errno) {
				name = unix.ErrnoName(errno)
			} else if err != nil {
				return err
			}
			fmt.Println(name)
		}
		return lines.Err()
	case "sleep": // a target for signals and ptrace, until killed
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return nil
	}
	if err, ok := fileOp(op, args); ok {
		return err
	}
	return fmt.Errorf("unknown operation %q", op)
}

// sigio makes a pipe signal pid (SIGIO, or sig when not 0) when data
// arrives: the owner set with F_SETOWN, the signal with F_SETSIG, and
// O_ASYNC. The signal is generated within the write.
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
	_, err := unix.Write(p[1], []byte("x"))
	return err
}

// sigurg makes a TCP loopback connection whose receiving socket is owned
// by pid, and sends it one byte of urgent data (MSG_OOB): the receiving
// side signals SIGURG when the urgent pointer arrives, which the poll for
// POLLPRI waits for.
func sigurg(pid int) error {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
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
		return err
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
		return fmt.Errorf("no urgent data arrived: %d %v", n, err)
	}
	return nil
}

// sigwatchBlocked marks the second run of a sigwatch helper, the one that
// starts with the watched signals blocked.
const sigwatchBlocked = "RAUHA_BPF_TEST_SIGWATCH_BLOCKED"

// sigwatch prints the number of each SIGIO, SIGURG, SIGUSR1 and SIGPWR the
// process gets, in the order the kernel hands them over, so that a test
// can send SIGPWR as a mark after the signals it looks for.
//
// os/signal cannot keep that order: any thread may take a signal, and a
// thread that dequeued SIGURG can be preempted before the Go runtime
// queues it while another thread takes a later SIGPWR and has it printed
// first. Here every thread blocks the watched signals and one signalfd
// reads them: the kernel hands pending signals over lowest number first,
// and SIGPWR is the highest watched, so a SIGPWR sent after a watched
// signal was generated is read after it. A Go program can block signals in
// every thread only by starting with them blocked (each thread the runtime
// creates takes the mask it started with), hence the re-execution. SIGURG
// stays blocked only with asynchronous preemption off, which the test sets.
func sigwatch() error {
	var set unix.Sigset_t
	for _, s := range []unix.Signal{unix.SIGIO, unix.SIGURG, unix.SIGUSR1, unix.SIGPWR} {
		set.Val[(s-1)/64] |= 1 << ((s - 1) % 64)
	}
	if os.Getenv(sigwatchBlocked) == "" {
		runtime.LockOSThread() // the mask is this thread's, and execve keeps it
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			return err
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		return unix.Exec(exe, os.Args, append(os.Environ(), sigwatchBlocked+"=1"))
	}
	fd, err := unix.Signalfd(-1, &set, unix.SFD_CLOEXEC|unix.SFD_NONBLOCK)
	if err != nil {
		return err
	}
	info := make([]byte, unsafe.Sizeof(unix.SignalfdSiginfo{}))
	// A signal left pending from before the execution (the first run's
	// own) was not sent by the test.
	for {
		if _, err := unix.Read(fd, info); errors.Is(err, unix.EAGAIN) {
			break
		} else if err != nil {
			return err
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	fmt.Println("ready")
	for {
		if _, err := unix.Read(fd, info); err != nil {
			return err
		}
		fmt.Println((*unix.SignalfdSiginfo)(unsafe.Pointer(&info[0])).Signo)
	}
}

// packetOp sends one datagram whose real destination the address passed
// to sendto does not tell (raw, ping) or does not name (lsrr).
func packetOp(op string, args []string) error {
	echo := []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1, 'r', 'a', 'u', 'h', 'a', 0}
	switch op {
	case "raw":
		sum := icmpChecksum(echo)
		echo[2], echo[3] = byte(sum>>8), byte(sum)
		return sendOnce(unix.SOCK_RAW, unix.IPPROTO_ICMP, args[0]+":0", echo, nil)
	case "ping":
		// Ping sockets are open to the groups of ping_group_range; the
		// helper runs in a netns of its own, so this setting is its own.
		if err := loopbackUp(); err != nil {
			return err
		}
		if err := os.WriteFile("/proc/sys/net/ipv4/ping_group_range", []byte("0 0"), 0); err != nil {
			return err
		}
		return sendOnce(unix.SOCK_DGRAM, unix.IPPROTO_ICMP, args[0]+":0", echo, nil)
	case "lsrr":
		hop := netip.MustParseAddr(args[1]).As4()
		opts := []byte{1, 131, 7, 4, hop[0], hop[1], hop[2], hop[3]} // NOP, LSRR via hop
		return sendOnce(unix.SOCK_DGRAM, 0, args[0], []byte("rauha"), opts)
	}
	return fmt.Errorf("unknown packet operation %q", op)
}

func sendOnce(typ, proto int, dst string, payload, ipOptions []byte) error {
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if ipOptions != nil {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_IP, unix.IP_OPTIONS, string(ipOptions)); err != nil {
			return err
		}
	}
	return unix.Sendto(fd, payload, 0, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
}

// loopbackUp brings up lo of the calling thread's netns (down in a new one).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func icmpChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

func sockOp(datagram, forceV6 bool, ap netip.AddrPort) error {
	family := unix.AF_INET
	if ap.Addr().Is6() || forceV6 {
		family = unix.AF_INET6
	}
	typ := unix.SOCK_STREAM
	if datagram {
		typ = unix.SOCK_DGRAM
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	if datagram {
		return unix.Sendto(fd, []byte("rauha"), 0, sa)
	}
	return unix.Connect(fd, sa)
}

// workload describes how to start a helper.
type workload struct {
	cgroup string              // cgroup-v2 directory to start in ("" = the test's own)
	cred   *syscall.Credential // nil = root
	netns  bool                // in a new network namespace
	userns bool                // in a new user namespace, as its root
	exe    string              // the helper binary; "" = this test binary
}

func (w workload) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe := w.exe
	if exe == "" {
		exe = testBinary(t)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.cred}
	if w.netns {
		cmd.SysProcAttr.Cloneflags = unix.CLONE_NEWNET
	}
	if w.userns {
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	}
	if w.cgroup != "" {
		f, err := os.Open(w.cgroup)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(f.Fd())
	}
	return cmd
}

// run starts a helper, waits, and returns its one-line verdict.
func (w workload) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := w.command(t, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helper %v: %v: %s", args, err, ee.Stderr)
		}
		t.Fatalf("helper %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func (w workload) expect(t *testing.T, want string, args ...string) {
	t.Helper()
	if got := w.run(t, args...); got != want {
		t.Errorf("%v in %s: got %s, want %s", args, w.where(), got, want)
	}
}

func (w workload) where() string {
	s := "host cgroup"
	if w.cgroup != "" {
		s = filepath.Base(w.cgroup)
	}
	if w.netns {
		s += " (own netns)"
	}
	return s
}

// start runs a long-lived "sleep" helper and returns its pid; it is killed
// when the test ends.
func (w workload) start(t *testing.T) int {
	t.Helper()
	cmd := w.command(t, "sleep")
	_, stdout := spawn(t, cmd)
	buf := make([]byte, 6)
	if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("sleep helper did not start: %q %v", buf, err)
	}
	return cmd.Process.Pid
}

// spawn starts cmd with pipes to its stdin and from its stdout; when the
// test ends, stdin is closed and the process killed and reaped.
func spawn(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return stdin, stdout
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads BPF programs and creates cgroups")
	}
}

// cgroupRoot is where tests create their cgroups: the unified hierarchy at
// /sys/fs/cgroup/unified on hybrid hosts, /sys/fs/cgroup on pure v2 ones.
func cgroupRoot(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return filepath.Join(dir, "rauha-test-bpf")
		}
	}
	t.Skip("no cgroup v2 hierarchy mounted")
	return ""
}

// testCgroup creates <root>/rauha-test-bpf/<name> and removes it (and the
// parent, once empty) when the test ends.
func testCgroup(t *testing.T, name string) string {
	t.Helper()
	root := cgroupRoot(t)
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, dir); _ = os.Remove(root) })
	return dir
}

func removeCgroup(t *testing.T, dir string) {
	t.Helper()
	// Children first; our helpers are gone by now (their cleanups ran).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroup(t, filepath.Join(dir, e.Name()))
		}
	}
	var err error
	for range 50 { // a just-reaped task can linger a moment
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("remove test cgroup %s: %v", dir, err)
}

// testKernel opens a kernel handle on a test pin directory that is removed
// (with everything pinned in it) when the test ends.
func testKernel(t *testing.T, lsm bool) (*Kernel, string) {
	t.Helper()
	pinDir := filepath.Join(bpffsRoot, fmt.Sprintf("rauha-test-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid()))
	t.Cleanup(func() {
		if err := RemovePins(pinDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	k, err := Open(pinDir, "", lsm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k, pinDir
}

// drainUntil drains events until one matches or a second passes.
func drainUntil(t *testing.T, k *Kernel, match func(Event) bool) Event {
	t.Helper()
	var seen []Event
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		evs, err := k.DrainEvents(1000, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if match(e) {
				return e
			}
		}
		seen = append(seen, evs...)
	}
	t.Fatalf("no matching event among %d: %+v", len(seen), seen)
	return Event{}
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort(t *testing.T) uint16 {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(sa.(*unix.SockaddrInet4).Port)
}

// sigWatcher is a running "sigwatch" helper: a target for signals a test
// wants to see arrive, or not.
type sigWatcher struct {
	pid   int
	lines chan string
}

// watch starts a sigwatch helper; it is stopped when the test ends. The
// Go runtime's own SIGURG (asynchronous preemption) is switched off so
// that the helper can block SIGURG and every SIGURG it reports came from
// outside.
func (w workload) watch(t *testing.T) *sigWatcher {
	t.Helper()
	cmd := w.command(t, "sigwatch")
	cmd.Env = append(cmd.Env, "GODEBUG=asyncpreemptoff=1")
	_, stdout := spawn(t, cmd)
	s := &sigWatcher{pid: cmd.Process.Pid, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	if l := <-s.lines; l != "ready" {
		t.Fatalf("sigwatch did not start: %q", l)
	}
	return s
}

// TestSigwatchMark: every signal pending before the mark is reported
// before it, however the watcher's threads are scheduled. A watcher whose
// threads take the signals themselves fails this within a few hundred
// rounds, hence the count.
func TestSigwatchMark(t *testing.T) {
	w := workload{}.watch(t)
	sigs := []unix.Signal{unix.SIGUSR1, unix.SIGURG, unix.SIGIO}
	for i := range 2000 {
		sig := sigs[i%len(sigs)]
		if err := unix.Kill(w.pid, sig); err != nil {
			t.Fatal(err)
		}
		if got := w.received(t); !slices.Equal(got, []int{int(sig)}) {
			t.Fatalf("round %d: received %v, want [%d]", i, got, sig)
		}
	}
}

// received returns the signals that reached the watcher since the last
// call. A signal the kernel generated for it is pending before the sending
// syscall returns; the test's own SIGPWR, sent now, is read after every
// lower-numbered signal already pending (see sigwatch), so it marks the end.
func (s *sigWatcher) received(t *testing.T) []int {
	t.Helper()
	if err := unix.Kill(s.pid, unix.SIGPWR); err != nil {
		t.Fatal(err)
	}
	var got []int
	timeout := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("sigwatch %d exited; got %v", s.pid, got)
			}
			n, _ := strconv.Atoi(l)
			if n == int(unix.SIGPWR) {
				return got
			}
			got = append(got, n)
		case <-timeout:
			t.Fatalf("sigwatch %d: no SIGPWR mark within 5s; got %v", s.pid, got)
		}
	}
}
