// fileattack reaches a file by the routes that are not open(2) of its
// name: extended attributes, file handles and unix sockets.
//
//	fileattack setxattr PATH NAME VALUE   set an extended attribute
//	fileattack getxattr PATH NAME         print an extended attribute
//	fileattack removexattr PATH NAME      remove an extended attribute
//	fileattack setacl PATH                give uid 1000 read access by a POSIX
//	                                      ACL (setfacl -m u:1000:r PATH)
//	fileattack handle PATH                print "TYPE HEX" from name_to_handle_at
//	fileattack byhandle DIR TYPE HEX      open_by_handle_at on DIR's file
//	                                      system, print the file's content
//	fileattack listen PATH                serve "hello\n" on a unix socket
//	fileattack connect PATH               print what the socket at PATH sends
//	fileattack linkat DIR OLD NEW         linkat(2) with OLD and NEW relative to DIR
//	fileattack renameat DIR OLD NEW       renameat(2) with OLD and NEW relative to DIR
//	fileattack rename OLD NEW             rename(2): relative names from the working directory
//
// On failure the errno alone goes to stderr ("connect: no such file or
// directory") and the exit status is 1.
package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	switch a := os.Args[1:]; a[0] {
	case "setxattr":
		need(a, 4)
		check("setxattr", unix.Setxattr(a[1], a[2], []byte(a[3]), 0))
	case "getxattr":
		need(a, 3)
		buf := make([]byte, 4096)
		n, err := unix.Getxattr(a[1], a[2], buf)
		check("getxattr", err)
		fmt.Printf("%s\n", buf[:n])
	case "removexattr":
		need(a, 3)
		check("removexattr", unix.Removexattr(a[1], a[2]))
	case "setacl":
		need(a, 2)
		check("setxattr", unix.Setxattr(a[1], "system.posix_acl_access", accessACL(), 0))
	case "handle":
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, a[1], 0)
		check("name_to_handle_at", err)
		fmt.Printf("%d %s\n", h.Type(), hex.EncodeToString(h.Bytes()))
	case "byhandle":
		need(a, 4)
		dir, err := unix.Open(a[1], unix.O_RDONLY|unix.O_DIRECTORY, 0)
		check("open", err)
		typ, err := strconv.Atoi(a[2])
		check("handle type", err)
		raw, err := hex.DecodeString(a[3])
		check("handle", err)
		fd, err := unix.OpenByHandleAt(dir, unix.NewFileHandle(int32(typ), raw), unix.O_RDONLY)
		check("open_by_handle_at", err)
		_, err = io.Copy(os.Stdout, os.NewFile(uintptr(fd), "handle"))
		check("read", err)
	case "listen":
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: a[1], Net: "unix"})
		check("listen", err)
		for {
			c, err := l.Accept()
			check("accept", err)
			_, _ = io.WriteString(c, "hello\n")
			_ = c.Close()
		}
	case "linkat", "renameat":
		need(a, 4)
		dir, err := unix.Open(a[1], unix.O_PATH|unix.O_DIRECTORY, 0)
		check("open", err)
		if a[0] == "linkat" {
			check("linkat", unix.Linkat(dir, a[2], dir, a[3], 0))
		} else {
			check("renameat", unix.Renameat(dir, a[2], dir, a[3]))
		}
	case "rename":
		need(a, 3)
		check("rename", unix.Rename(a[1], a[2]))
	case "connect":
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: a[1], Net: "unix"})
		check("connect", err)
		_, _ = io.Copy(os.Stdout, c)
	default:
		usage()
	}
}

// accessACL is the system.posix_acl_access value of user::rw-,
// user:1000:r--, group::r--, mask::r--, other::r-- (the kernel's xattr
// format: a version, then tag, permissions and id per entry, sorted by tag).
func accessACL() []byte {
	const undefined = 0xffffffff
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 6, undefined}, {0x02, 4, 1000}, {0x04, 4, undefined}, {0x10, 4, undefined}, {0x20, 4, undefined}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

func need(a []string, n int) {
	if len(a) != n {
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: fileattack setxattr PATH NAME VALUE | getxattr PATH NAME | removexattr PATH NAME | setacl PATH | handle PATH | byhandle DIR TYPE HEX | listen PATH | connect PATH | linkat DIR OLD NEW | renameat DIR OLD NEW | rename OLD NEW")
	os.Exit(2)
}

func check(op string, err error) {
	if err == nil {
		return
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = errno
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", op, err)
	os.Exit(1)
}
