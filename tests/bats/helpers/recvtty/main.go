// Command recvtty is the console-socket peer of the end-to-end tests: it
// listens on a unix socket, receives the pty master that an OCI runtime sends
// for a container started with --tty --console-socket, writes what the
// container prints to a file, and optionally types a line into the pty.
// With -pidfd it is the --pidfd-socket peer instead: it writes the "Pid:"
// line of the received pidfd's fdinfo and exits.
//
// Usage: recvtty [-out FILE] [-in TEXT] [-ready FILE] [-pidfd] SOCKET
//
// It serves one connection and exits when the pty reaches EOF (the container
// side was closed), or is killed by the test's teardown.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

func main() {
	out := flag.String("out", "", "file to copy the pty output to (default stdout)")
	in := flag.String("in", "", "text written to the pty once it is received")
	ready := flag.String("ready", "", "file created once the socket listens")
	pidfd := flag.Bool("pidfd", false, "receive a pidfd, write its fdinfo Pid: line and exit")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: recvtty [-out FILE] [-in TEXT] [-ready FILE] [-pidfd] SOCKET")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out, *in, *ready, *pidfd); err != nil {
		fmt.Fprintln(os.Stderr, "recvtty:", err)
		os.Exit(1)
	}
}

func run(path, outPath, input, ready string, pidfd bool) error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("listen on console socket %s: %w", path, err)
	}
	defer ln.Close()
	if ready != "" {
		if err := os.WriteFile(ready, []byte("ready\n"), 0o644); err != nil {
			return fmt.Errorf("write ready file: %w", err)
		}
	}
	conn, err := ln.AcceptUnix()
	if err != nil {
		return fmt.Errorf("accept on console socket: %w", err)
	}
	defer conn.Close()
	master, err := recvFd(conn)
	if err != nil {
		return err
	}
	defer master.Close()

	var w io.Writer = os.Stdout
	if outPath != "" {
		f, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open output file: %w", err)
		}
		defer f.Close()
		w = f
	}
	if pidfd {
		return writePidLine(w, master)
	}
	if input != "" {
		if _, err := master.Write([]byte(input)); err != nil {
			return fmt.Errorf("write to pty: %w", err)
		}
	}
	// EIO is how a pty master reports that every slave fd was closed.
	if _, err := io.Copy(w, master); err != nil && !isEIO(err) {
		return fmt.Errorf("copy pty output: %w", err)
	}
	return nil
}

// recvFd reads the one SCM_RIGHTS fd the runtime sends on the socket.
func recvFd(conn *net.UnixConn) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, _, _, err := conn.ReadMsgUnix(name, oob)
	if err != nil {
		return nil, fmt.Errorf("receive pty master: %w", err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive pty master: expected one control message (%v)", err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("receive pty master: expected one fd (%v)", err)
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}

// writePidLine writes the "Pid:" line of f's fdinfo, which only a pidfd has.
func writePidLine(w io.Writer, f *os.File) error {
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", f.Fd()))
	if err != nil {
		return fmt.Errorf("read fdinfo: %w", err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if strings.HasPrefix(line, "Pid:") {
			_, err := fmt.Fprintln(w, strings.Join(strings.Fields(line), " "))
			return err
		}
	}
	return fmt.Errorf("the received fd is no pidfd: fdinfo has no Pid: line:\n%s", info)
}

func isEIO(err error) bool {
	pe, ok := err.(*os.PathError)
	return ok && pe.Err == syscall.EIO
}
