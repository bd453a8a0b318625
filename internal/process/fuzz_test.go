package process

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// FuzzNewProcess feeds exec --process bytes (libzone's FuzzParseProcess
// fuzzes their parsing and validation) through the conversion to a
// libcontainer process. Invariants: no panic; a converted process has the
// same args, cwd and user, and the same ambient capabilities.
func FuzzNewProcess(f *testing.F) {
	for _, s := range []string{
		// What "rauha spec" writes.
		`{"terminal":true,"user":{"uid":0,"gid":0},"args":["sh"],"env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","TERM=xterm"],"cwd":"/","capabilities":{"bounding":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"],"effective":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"],"permitted":["CAP_AUDIT_WRITE","CAP_KILL","CAP_NET_BIND_SERVICE"]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}],"noNewPrivileges":true}`,
		`{"args":["sh","-c","echo hi"],"cwd":"/","env":["PATH=/bin"],"user":{"uid":1000,"gid":1000}}`,
		`{"terminal":true,"consoleSize":{"height":24,"width":80},"args":["top"],"cwd":"/tmp","capabilities":{"bounding":["CAP_KILL"],"ambient":["CAP_KILL"]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":10,"soft":10}],"noNewPrivileges":true,"execCPUAffinity":{"initial":"0-1","final":"0"}}`,
		`{"args":["x"],"cwd":"/","rlimits":[{"type":"RLIMIT_BOGUS"}]}`,
		`{"args":["x"],"cwd":"/","user":{"uid":4294967295,"gid":4294967295,"additionalGids":[4294967295]}}`,
		`{"args":["x"],"cwd":"/","scheduler":{"policy":"SCHED_FIFO","priority":99},"ioPriority":{"class":"IOPRIO_CLASS_RT","priority":7}}`,
		`{"args":["x"],"cwd":"/","execCPUAffinity":{"initial":"7-3"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p specs.Process
		if json.Unmarshal(data, &p) != nil {
			return
		}
		lp, err := newProcess(&p)
		if err != nil {
			return
		}
		if !slices.Equal(lp.Args, p.Args) || lp.Cwd != p.Cwd || lp.UID != int(p.User.UID) || lp.GID != int(p.User.GID) {
			t.Fatalf("conversion changed the process: %+v -> %+v", p, lp)
		}
		if lp.UID < 0 || lp.GID < 0 {
			t.Fatalf("uid/gid %d/%d wrapped negative", lp.UID, lp.GID)
		}
		// Ambient capabilities pass unchanged: libcontainer warns about
		// those it cannot raise, as runc does.
		if c := lp.Capabilities; c != nil && !slices.Equal(c.Ambient, p.Capabilities.Ambient) {
			t.Fatalf("ambient capabilities changed: %v -> %v", p.Capabilities.Ambient, c.Ambient)
		}
	})
}

// FuzzRecvFile sends what a console-socket peer may send (any name bytes,
// zero to three descriptors) over a real socket pair to recvFile, the
// receiving side of --console-socket. Invariants: no panic; it succeeds
// only for exactly one descriptor, which then is the one sent, with the name
// sent; and it never leaks a descriptor, whatever it received.
func FuzzRecvFile(f *testing.F) {
	f.Add([]byte("/dev/pts/3"), uint8(1))
	f.Add([]byte("/dev/pts/0"), uint8(2))
	f.Add([]byte("x"), uint8(3))
	f.Add([]byte("/dev/pts/1"), uint8(0))
	f.Add(bytes.Repeat([]byte("a"), 5000), uint8(1))
	f.Fuzz(func(t *testing.T, name []byte, nfds uint8) {
		if len(name) == 0 {
			// A stream socket carries no descriptor without a byte of data.
			return
		}
		nfds %= 4
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		send, recv := os.NewFile(uintptr(sp[0]), "send"), os.NewFile(uintptr(sp[1]), "recv")
		defer send.Close()
		defer recv.Close()
		sent, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		defer sent.Close()
		before := openFDs(t)
		fds := make([]int, nfds)
		for i := range fds {
			fds[i] = int(sent.Fd())
		}
		var oob []byte
		if nfds > 0 {
			oob = unix.UnixRights(fds...)
		}
		if err := unix.Sendmsg(sp[0], name, oob, nil, 0); err != nil {
			t.Fatalf("sendmsg: %v", err)
		}
		got, err := recvFile(recv)
		if err != nil {
			if nfds == 1 {
				t.Fatalf("one descriptor sent, recvFile failed: %v", err)
			}
			if n := openFDs(t); n != before {
				t.Fatalf("failed recvFile leaked descriptors: %d open, %d before", n, before)
			}
			return
		}
		if nfds != 1 {
			t.Fatalf("recvFile accepted %d descriptors", nfds)
		}
		var a, b unix.Stat_t
		if unix.Fstat(int(got.Fd()), &a) != nil || unix.Fstat(int(sent.Fd()), &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			t.Fatal("received descriptor is not the one sent")
		}
		if want := string(name[:min(len(name), 4096)]); got.Name() != want {
			t.Fatalf("name %q, sent %q", got.Name(), want)
		}
		got.Close()
		if n := openFDs(t); n != before {
			t.Fatalf("recvFile leaked descriptors: %d open, %d before", n, before)
		}
	})
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
