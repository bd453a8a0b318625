// Command sdnotify is both ends of the sd_notify protocol for the
// end-to-end tests.
//
//	sdnotify send MESSAGE        send MESSAGE to the datagram socket $NOTIFY_SOCKET
//	sdnotify listen SOCKET FILE  bind SOCKET, append every datagram to FILE
//
// The send side is copied into container root filesystems (it is static), the
// listen side plays systemd on the host.
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sdnotify:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "send":
		return send(os.Getenv("NOTIFY_SOCKET"), args[1])
	case len(args) == 3 && args[0] == "listen":
		return listen(args[1], args[2])
	}
	return fmt.Errorf("usage: sdnotify send MESSAGE | sdnotify listen SOCKET FILE")
}

func send(path, msg string) error {
	if path == "" {
		return fmt.Errorf("NOTIFY_SOCKET is not set")
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("connect to notify socket %s: %w", path, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(msg)); err != nil {
		return fmt.Errorf("send to notify socket %s: %w", path, err)
	}
	return nil
}

func listen(path, outPath string) error {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("bind notify socket %s: %w", path, err)
	}
	defer conn.Close()
	out, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", outPath, err)
	}
	defer out.Close()
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return fmt.Errorf("read notify socket: %w", err)
		}
		if _, err := fmt.Fprintf(out, "%s\n", buf[:n]); err != nil {
			return fmt.Errorf("write %s: %w", outPath, err)
		}
	}
}
