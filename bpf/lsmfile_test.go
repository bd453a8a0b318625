package bpf

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// fileOp runs the helper operations of TestLSMFileRoutes; ok is false for
// an operation it does not know.
func fileOp(op string, args []string) (err error, ok bool) {
	switch op {
	case "chmod": // chmod <path>: setuid and world-writable
		return unix.Chmod(args[0], 0o4777), true
	case "chown": // chown <path>: to 1000:1000
		return unix.Chown(args[0], 1000, 1000), true
	case "utimes": // utimes <path>: back to the epoch
		return unix.UtimesNano(args[0], []unix.Timespec{{}, {}}), true
	case "truncate":
		return unix.Truncate(args[0], 0), true
	case "setxattr": // trusted.*: every file system with xattrs has it for root
		return unix.Setxattr(args[0], "trusted.rauha", []byte("x"), 0), true
	case "removexattr":
		return unix.Removexattr(args[0], "trusted.rauha"), true
	case "setacl": // setacl <path>: an access ACL equal to mode 0755, as setfacl writes it
		return unix.Setxattr(args[0], "system.posix_acl_access", posixACL0755, 0), true
	case "removeacl":
		return unix.Removexattr(args[0], "system.posix_acl_access"), true
	case "link": // link <old> <new>
		return unix.Link(args[0], args[1]), true
	case "rename": // rename <old> <new>
		return unix.Rename(args[0], args[1]), true
	case "renameat": // renameat <dir> <old> <new>: the names relative to dir
		dir, err := unix.Open(args[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err, true
		}
		defer unix.Close(dir)
		return unix.Renameat(dir, args[1], dir, args[2]), true
	case "unlink":
		return unix.Unlink(args[0]), true
	case "rmdir":
		return unix.Rmdir(args[0]), true
	case "create": // create <path>: a new regular file (open O_CREAT|O_EXCL)
		fd, err := unix.Open(args[0], unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err, true
	case "mkdir":
		return unix.Mkdir(args[0], 0o755), true
	case "mkfifo":
		return unix.Mkfifo(args[0], 0o644), true
	case "symlink": // symlink <target> <path>
		return unix.Symlink(args[0], args[1]), true
	case "bind": // bind <path>: a unix socket bound there (mknod of a socket)
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err, true
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrUnix{Name: args[0]}), true
	case "unix-connect", "unix-dgram-connect", "unix-sendto": // <op> <socket path>
		typ := unix.SOCK_STREAM
		if op != "unix-connect" {
			typ = unix.SOCK_DGRAM
		}
		fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err, true
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrUnix{Name: args[0]}
		if op == "unix-sendto" {
			return unix.Sendto(fd, []byte("x"), 0, sa), true
		}
		return unix.Connect(fd, sa), true
	}
	return nil, false
}

// posixACL0755 is the xattr form of the ACL u::rwx,g::r-x,o::r-x: version
// 2, then {tag, perm, id} per entry.
var posixACL0755 = []byte{
	2, 0, 0, 0,
	0x01, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, // ACL_USER_OBJ
	0x04, 0, 5, 0, 0xff, 0xff, 0xff, 0xff, // ACL_GROUP_OBJ
	0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff, // ACL_OTHER
}

// unixSocket binds a socket of type typ at path, listening when it is a
// stream socket, closed when the test ends.
func unixSocket(t *testing.T, path string, typ int) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 16); err != nil {
			t.Fatal(err)
		}
	}
}

// The routes to a listed inode besides open and exec (lsmfile.bpf.h): each
// hook denies a zone task with EACCES and an event, and allows the host.
// Everything below a listed directory is judged by the walk up, including
// files and sockets made after the list was pushed.
func TestLSMFileRoutes(t *testing.T) {
	k := lsmKernel(t)
	const zoneA = 13
	cgA := testCgroup(t, "lsm-file")
	if err := k.SetPolicy(zoneA, ZonePolicy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.AddMember(zoneA, cgA); err != nil {
		t.Fatal(err)
	}
	att, err := k.Attached()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lsm/inode_setattr", "lsm/inode_setxattr", "lsm/inode_removexattr", "lsm/inode_set_acl", "lsm/inode_remove_acl", "lsm/inode_link",
		"lsm/inode_rename", "lsm/inode_unlink", "lsm/inode_rmdir", "lsm/unix_stream_connect", "lsm/unix_may_send"} {
		if !slices.Contains(att, want) {
			t.Errorf("%s is not attached: %q", want, att)
		}
	}
	inA, host := workload{cgroup: cgA}, workload{}

	dir := t.TempDir()
	mk := func(rel string) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	denied := mk("denied")      // a denied file
	roFile := mk("ro/sub/file") // below a read_only directory
	mk("private/old")           // a denied directory
	free := mk("free/file")     // no rule
	sockDenied := filepath.Join(dir, "sock-denied")
	unixSocket(t, sockDenied, unix.SOCK_STREAM)
	deny := func(rel string, mask FileAccess) FileDeny {
		dev, ino := statDevIno(t, filepath.Join(dir, rel))
		return FileDeny{Dev: dev, Ino: ino, Mask: mask}
	}
	p := ZonePolicy{FileTrees: true, FileDenies: []FileDeny{
		deny("denied", FileOpen), deny("ro", FileChange), deny("private", FileOpen), deny("sock-denied", FileOpen),
	}}
	if err := k.SetPolicy(zoneA, p); err != nil {
		t.Fatal(err)
	}
	// Made after the push: only the walk up to private/ covers them.
	late := mk("private/late")
	sockLate := filepath.Join(dir, "private/sock")
	unixSocket(t, sockLate, unix.SOCK_STREAM)
	dgramLate := filepath.Join(dir, "private/dgram")
	unixSocket(t, dgramLate, unix.SOCK_DGRAM)
	_, privIno := statDevIno(t, filepath.Join(dir, "private"))
	_, deniedIno := statDevIno(t, denied)

	event := func(t *testing.T, hook Hook, ino uint64, name string) {
		t.Helper()
		ev := drainUntil(t, k, func(e Event) bool {
			return e.Zone == zoneA && e.Control == ControlFile && e.Hook == hook && e.Verdict == VerdictDenied
		})
		if ev.Ino != ino || ev.Path != name || ev.Errno != unix.EACCES {
			t.Errorf("%v event: %+v, want inode %d, path %q", hook, ev, ino, name)
		}
	}
	notDenied := func(w workload, args ...string) {
		t.Helper()
		if got := w.run(t, args...); got == "EACCES" {
			t.Errorf("%v in %s: EACCES", args, w.where())
		}
	}

	t.Run("inode_setattr", func(t *testing.T) {
		for _, op := range []string{"chmod", "chown", "utimes", "truncate"} {
			inA.expect(t, "EACCES", op, denied)
			inA.expect(t, "EACCES", op, roFile)
			inA.expect(t, "EACCES", op, late)
			inA.expect(t, "ok", op, free)
		}
		event(t, HookLSMInodeSetattr, deniedIno, "")
		host.expect(t, "ok", "chmod", roFile)
		host.expect(t, "ok", "utimes", denied)
	})

	t.Run("inode_setxattr", func(t *testing.T) {
		inA.expect(t, "EACCES", "setxattr", denied)
		inA.expect(t, "EACCES", "setxattr", roFile)
		event(t, HookLSMInodeSetxattr, deniedIno, "")
		notDenied(inA, "setxattr", free) // ok, or EOPNOTSUPP where the file system has no xattrs
		notDenied(host, "setxattr", denied)
	})

	t.Run("inode_removexattr", func(t *testing.T) {
		inA.expect(t, "EACCES", "removexattr", denied)
		event(t, HookLSMInodeRemovexattr, deniedIno, "")
		notDenied(host, "removexattr", denied)
	})

	// ACLs have hooks of their own since 6.2; before, the programs are
	// attached to inode_setxattr and inode_removexattr, whose programs
	// run first and report.
	t.Run("inode_set_acl", func(t *testing.T) {
		inA.expect(t, "EACCES", "setacl", denied)
		inA.expect(t, "EACCES", "setacl", roFile)
		inA.expect(t, "EACCES", "removeacl", late)
		ev := drainUntil(t, k, func(e Event) bool {
			return e.Zone == zoneA && e.Control == ControlFile && e.Verdict == VerdictDenied &&
				(e.Hook == HookLSMInodeSetACL || e.Hook == HookLSMInodeSetxattr)
		})
		if ev.Ino != deniedIno {
			t.Errorf("event: %+v", ev)
		}
		notDenied(inA, "setacl", free) // ok, or EOPNOTSUPP without ACLs
		notDenied(host, "setacl", denied)
	})

	t.Run("inode_link", func(t *testing.T) {
		inA.expect(t, "EACCES", "link", denied, filepath.Join(dir, "free/l1"))
		inA.expect(t, "EACCES", "link", late, filepath.Join(dir, "free/l2"))
		inA.expect(t, "EACCES", "link", roFile, filepath.Join(dir, "free/l3"))
		event(t, HookLSMPathLink, deniedIno, "")
		inA.expect(t, "ok", "link", free, filepath.Join(dir, "free/l4"))
		host.expect(t, "ok", "link", denied, filepath.Join(dir, "free/l5"))
	})

	t.Run("inode_rename", func(t *testing.T) {
		inA.expect(t, "EACCES", "rename", late, filepath.Join(dir, "free/moved"))
		event(t, HookLSMPathRename, privIno, "late")
		inA.expect(t, "EACCES", "rename", denied, filepath.Join(dir, "free/moved"))
		inA.expect(t, "ok", "rename", filepath.Join(dir, "free/l4"), filepath.Join(dir, "free/l6"))
	})

	t.Run("file_open below a denied directory", func(t *testing.T) {
		inA.expect(t, "EACCES", "open", late)
		event(t, HookLSMFileOpen, privIno, "late")
		inA.expect(t, "ok", "open", roFile) // read_only is not a deny
		host.expect(t, "ok", "open", late)
	})

	t.Run("inode_unlink and inode_rmdir", func(t *testing.T) {
		inA.expect(t, "EACCES", "unlink", denied)
		event(t, HookLSMPathUnlink, deniedIno, "")
		inA.expect(t, "EACCES", "unlink", late)   // below a denied directory
		inA.expect(t, "EACCES", "unlink", roFile) // below a read_only one
		empty := filepath.Join(dir, "private/empty")
		if err := os.Mkdir(empty, 0o755); err != nil {
			t.Fatal(err)
		}
		inA.expect(t, "EACCES", "rmdir", empty)
		event(t, HookLSMPathRmdir, privIno, "empty")
		// Replacing a denied file removes it too.
		inA.expect(t, "EACCES", "rename", filepath.Join(dir, "free/l6"), denied)
		event(t, HookLSMPathRename, deniedIno, "")
		inA.expect(t, "ok", "unlink", filepath.Join(dir, "free/l6"))
		host.expect(t, "ok", "rmdir", empty)
		for _, f := range []string{denied, late, roFile} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	})

	// A listed name denies what is created or moved there after the push
	// (a deny path that did not exist when it was resolved), and, when it
	// is a directory, what is below it. Without the name the same file is
	// open to the zone.
	t.Run("a denied name created later", func(t *testing.T) {
		freeDev, freeIno := statDevIno(t, filepath.Join(dir, "free"))
		q := p
		q.FileTrees = false // the names alone
		if err := k.SetPolicy(zoneA, q); err != nil {
			t.Fatal(err)
		}
		secret := mk("free/secret")
		inA.expect(t, "ok", "open", secret)
		q.FileNames = []FileDenyName{{Dev: freeDev, Ino: freeIno, Name: "secret", Mask: FileOpen},
			{Dev: freeDev, Ino: freeIno, Name: "secretdir", Mask: FileOpen}}
		if err := k.SetPolicy(zoneA, q); err != nil {
			t.Fatal(err)
		}
		if got, err := k.PolicyOf(zoneA); err != nil || !got.Equal(q) {
			t.Errorf("PolicyOf = %+v, %v; want %+v", got, err, q.Normalize())
		}
		inA.expect(t, "EACCES", "open", secret)
		event(t, HookLSMFileOpen, freeIno, "secret")
		host.expect(t, "ok", "open", secret)
		inA.expect(t, "EACCES", "chmod", secret)
		inA.expect(t, "EACCES", "unlink", secret)
		inA.expect(t, "ok", "open", free) // a sibling
		// The zone cannot make the name itself, by any route.
		if err := os.Remove(secret); err != nil {
			t.Fatal(err)
		}
		other := mk("free/other")
		inA.expect(t, "EACCES", "rename", other, secret)
		event(t, HookLSMPathRename, freeIno, "secret")
		inA.expect(t, "EACCES", "create", secret)
		event(t, HookLSMPathMknod, freeIno, "secret")
		inA.expect(t, "EACCES", "mkdir", secret)
		inA.expect(t, "EACCES", "symlink", "/", secret)
		inA.expect(t, "EACCES", "link", other, secret)
		// Moved there by the host: denied at open.
		host.expect(t, "ok", "rename", other, secret)
		inA.expect(t, "EACCES", "open", secret)
		event(t, HookLSMFileOpen, freeIno, "secret")
		// A directory made at the name: what is below it too.
		below := mk("free/secretdir/sub/file")
		inA.expect(t, "EACCES", "open", below)
		event(t, HookLSMFileOpen, freeIno, "secretdir")
		inA.expect(t, "ok", "open", mk("free/secretdir2/file"))
		if err := k.SetPolicy(zoneA, p); err != nil {
			t.Fatal(err)
		}
		inA.expect(t, "ok", "open", secret)
	})

	// A denied path whose directory is missing too is listed by a chain of
	// names from the deepest directory of it that exists: the files made
	// there later are denied, whoever makes the directories, and the
	// events carry the chain's last link and the path's final name.
	// Without the chain the same files are open to the zone.
	t.Run("a denied path whose directory is made later", func(t *testing.T) {
		freeDev, freeIno := statDevIno(t, filepath.Join(dir, "free"))
		q := p
		q.FileTrees = false
		if err := k.SetPolicy(zoneA, q); err != nil {
			t.Fatal(err)
		}
		defer func() { // the next subtests' policy, also when this one fails
			if err := k.SetPolicy(zoneA, p); err != nil {
				t.Fatal(err)
			}
		}()
		hostMade := mk("free/chained/a/secret")
		inA.expect(t, "ok", "open", hostMade)
		if err := os.RemoveAll(filepath.Join(dir, "free/chained")); err != nil {
			t.Fatal(err)
		}
		chain := FileDenyChain{Dev: freeDev, Ino: freeIno, Names: []string{"chained", "a", "secret"}, Mask: FileOpen}
		zoneMade := FileDenyChain{Dev: freeDev, Ino: freeIno, Names: []string{"zc", "a", "secret"}, Mask: FileOpen}
		q.FileChains = []FileDenyChain{chain, zoneMade}
		if err := k.SetPolicy(zoneA, q); err != nil {
			t.Fatal(err)
		}
		if got, err := k.PolicyOf(zoneA); err != nil || !got.Equal(q) {
			t.Errorf("PolicyOf = %+v, %v; want %+v", got, err, q.Normalize())
		}
		// Directories and file made by the host after the push.
		hostMade = mk("free/chained/a/secret")
		inA.expect(t, "EACCES", "open", hostMade)
		event(t, HookLSMFileOpen, chain.Last().Ino, "secret")
		host.expect(t, "ok", "open", hostMade)
		inA.expect(t, "EACCES", "chmod", hostMade)
		inA.expect(t, "ok", "open", mk("free/chained/a/other")) // a sibling
		// The directories made by the zone: the file cannot be made, by
		// open or by a rename onto it (a hook that judges two paths).
		inA.expect(t, "ok", "mkdir", filepath.Join(dir, "free/zc"))
		inA.expect(t, "ok", "mkdir", filepath.Join(dir, "free/zc/a"))
		zoneSecret := filepath.Join(dir, "free/zc/a/secret")
		inA.expect(t, "EACCES", "create", zoneSecret)
		event(t, HookLSMPathMknod, zoneMade.Last().Ino, "secret")
		inA.expect(t, "EACCES", "rename", mk("free/zc/other"), zoneSecret)
		event(t, HookLSMPathRename, zoneMade.Last().Ino, "secret")
		if _, err := os.Stat(zoneSecret); !os.IsNotExist(err) {
			t.Errorf("%s was made: %v", zoneSecret, err)
		}
		// Made by the host, then moved into place with its directory.
		if err := os.RemoveAll(filepath.Join(dir, "free/chained")); err != nil {
			t.Fatal(err)
		}
		moved := mk("free/staging/a/secret")
		inA.expect(t, "ok", "open", moved)
		host.expect(t, "ok", "rename", filepath.Join(dir, "free/staging"), filepath.Join(dir, "free/chained"))
		inA.expect(t, "EACCES", "open", hostMade)
		event(t, HookLSMFileOpen, chain.Last().Ino, "secret")
	})

	// New entries inside a denied or read_only tree: refused by every
	// syscall that makes one, with the directory's inode and the new name
	// in the event. Before the path hooks judged creation, each of these
	// succeeded.
	t.Run("new entries", func(t *testing.T) {
		_, roIno := statDevIno(t, filepath.Join(dir, "ro"))
		for _, c := range []struct {
			args []string
			hook Hook
			name string
		}{
			{[]string{"create", filepath.Join(dir, "private/new")}, HookLSMPathMknod, "new"},
			{[]string{"mkdir", filepath.Join(dir, "private/newdir")}, HookLSMPathMkdir, "newdir"},
			{[]string{"mkfifo", filepath.Join(dir, "private/fifo")}, HookLSMPathMknod, "fifo"},
			{[]string{"bind", filepath.Join(dir, "private/bound")}, HookLSMPathMknod, "bound"},
			{[]string{"symlink", "/etc/passwd", filepath.Join(dir, "private/sym")}, HookLSMPathSymlink, "sym"},
			{[]string{"link", free, filepath.Join(dir, "private/hard")}, HookLSMPathLink, "hard"},
			{[]string{"rename", filepath.Join(dir, "free/file"), filepath.Join(dir, "private/moved")}, HookLSMPathRename, "moved"},
		} {
			inA.expect(t, "EACCES", c.args...)
			event(t, c.hook, privIno, c.name)
		}
		// read_only: the listed directory is found by the walk from sub/.
		inA.expect(t, "EACCES", "create", filepath.Join(dir, "ro/sub/new"))
		event(t, HookLSMPathMknod, roIno, "new")
		inA.expect(t, "EACCES", "mkdir", filepath.Join(dir, "ro/newdir"))
		for _, n := range []string{"new", "newdir", "fifo", "bound", "sym", "hard", "moved"} {
			if _, err := os.Lstat(filepath.Join(dir, "private", n)); !os.IsNotExist(err) {
				t.Errorf("private/%s was made: %v", n, err)
			}
		}
		inA.expect(t, "ok", "create", filepath.Join(dir, "free/new"))
		inA.expect(t, "ok", "mkdir", filepath.Join(dir, "free/newdir"))
		host.expect(t, "ok", "create", filepath.Join(dir, "private/hostnew"))
	})

	// A file system mounted below a denied directory after the push: the
	// inode hooks' walk stops at its root, the path hooks' walk goes on
	// through the mount point to private/.
	t.Run("a mount nested below a denied directory", func(t *testing.T) {
		mnt := filepath.Join(dir, "private/mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
		f := mk("private/mnt/late")
		host.expect(t, "ok", "chmod", f)
		inA.expect(t, "EACCES", "chmod", f)
		event(t, HookLSMPathChmod, privIno, "late")
		inA.expect(t, "EACCES", "chown", f)
		inA.expect(t, "EACCES", "truncate", f)
		inA.expect(t, "EACCES", "open", f) // file_open knows the mount too
		inA.expect(t, "EACCES", "create", filepath.Join(mnt, "new"))
		event(t, HookLSMPathMknod, privIno, "new")
		inA.expect(t, "EACCES", "unlink", f)
		event(t, HookLSMPathUnlink, privIno, "late")
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	})

	t.Run("unix_stream_connect", func(t *testing.T) {
		inA.expect(t, "EACCES", "unix-connect", sockDenied)
		_, sockIno := statDevIno(t, sockDenied)
		event(t, HookLSMUnixConnect, sockIno, "")
		inA.expect(t, "EACCES", "unix-connect", sockLate)
		event(t, HookLSMUnixConnect, privIno, "sock")
		host.expect(t, "ok", "unix-connect", sockLate)
	})

	t.Run("unix_may_send", func(t *testing.T) {
		inA.expect(t, "EACCES", "unix-sendto", dgramLate)
		event(t, HookLSMUnixSend, privIno, "dgram")
		inA.expect(t, "EACCES", "unix-dgram-connect", dgramLate)
		host.expect(t, "ok", "unix-sendto", dgramLate)
	})

	t.Run("no walk without FileTrees", func(t *testing.T) {
		q := p
		q.FileTrees = false
		if err := k.SetPolicy(zoneA, q); err != nil {
			t.Fatal(err)
		}
		inA.expect(t, "ok", "open", late)
		inA.expect(t, "EACCES", "chmod", denied) // the inode itself still is
		if err := k.SetPolicy(zoneA, p); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("audit", func(t *testing.T) {
		q := p
		q.Mode = ModeAudit
		if err := k.SetPolicy(zoneA, q); err != nil {
			t.Fatal(err)
		}
		inA.expect(t, "ok", "utimes", late)
		drainUntil(t, k, func(e Event) bool {
			return e.Zone == zoneA && e.Hook == HookLSMInodeSetattr && e.Verdict == VerdictAudited && e.Path == "late"
		})
	})
}
