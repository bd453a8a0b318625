// abstract listens on or connects to an abstract unix socket, the kind
// Landlock's abstract-socket scoping governs.
//
//	abstract listen NAME    serve "hello\n" to every connection to @NAME
//	abstract connect NAME   print what @NAME sends; on failure the error on
//	                        stderr ("connect @NAME: operation not permitted")
//	                        and exit 1
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: abstract listen|connect NAME")
		os.Exit(2)
	}
	addr := &net.UnixAddr{Name: "@" + os.Args[2], Net: "unix"}
	switch os.Args[1] {
	case "listen":
		l, err := net.ListenUnix("unix", addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "listen %s: %v\n", addr.Name, err)
			os.Exit(1)
		}
		for {
			c, err := l.Accept()
			if err != nil {
				fmt.Fprintf(os.Stderr, "accept: %v\n", err)
				os.Exit(1)
			}
			_, _ = io.WriteString(c, "hello\n")
			_ = c.Close()
		}
	case "connect":
		c, err := net.DialUnix("unix", nil, addr)
		if err != nil {
			// The errno alone: net's wrapping names the operation twice.
			var errno syscall.Errno
			if errors.As(err, &errno) {
				err = errno
			}
			fmt.Fprintf(os.Stderr, "connect %s: %v\n", addr.Name, err)
			os.Exit(1)
		}
		_, _ = io.Copy(os.Stdout, c)
	default:
		fmt.Fprintf(os.Stderr, "abstract: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}
