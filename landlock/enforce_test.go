package landlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// probe prints "<name> ok" or "<name> denied" for each shell test, so one
// shim run checks many accesses.
// Errors go to $ERR, /tmp/err unless the script sets it.
const probe = `p() { n=$1; shift; e=${ERR:-/tmp/err}; if "$@" >/dev/null 2>$e; then echo "$n ok"; else
  if grep -q "Permission denied" $e; then echo "$n denied"; else echo "$n failed: $(cat $e)"; fi; fi; }
`

func TestWritableOnly(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	res, sum := runShim(t, rootfs, Rules{Writable: []string{"/tmp", "/data"}}, "sh", "-c", probe+`
p tmp sh -c 'echo x > /tmp/a && cat /tmp/a'
p data sh -c 'echo x > /data/b'
p mkdir-data mkdir /data/d
p etc sh -c 'echo x > /etc/x'
p passwd sh -c 'echo x >> /etc/passwd'
p rm-passwd rm /etc/passwd
p root-mkdir mkdir /newdir
p null sh -c 'echo x > /dev/null'
p read-etc cat /etc/passwd
p pipe sh -c 'echo piped | cat | grep -q piped'
p proc cat /proc/self/status
`)
	t.Logf("summary: %+v", sum)
	expectLines(t, res, "tmp ok", "data ok", "mkdir-data ok", "etc denied", "passwd denied",
		"rm-passwd denied", "root-mkdir denied", "null ok", "read-etc ok", "pipe ok", "proc ok")
	if _, err := os.Stat(filepath.Join(rootfs, "etc/x")); err == nil {
		t.Fatal("/etc/x was created although /etc is not writable")
	}
}

func TestDenyFileAndDirectory(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	rules := Rules{Writable: []string{"/tmp"}, Deny: []string{"/etc/shadow", "/secret/sub"}}
	res, sum := runShim(t, rootfs, rules, "sh", "-c", probe+`
p shadow cat /etc/shadow
p escape-link cat /etc/escape
p passwd cat /etc/passwd
p ls-etc ls /etc
p write-shadow sh -c 'echo x > /etc/shadow'
p sub-more cat /secret/sub/more
p ls-sub ls /secret/sub
p secret-key cat /secret/key
p key-link cat /etc/key-link
p ls-secret ls /secret
p ls-root ls /
p tmp sh -c 'echo x > /tmp/a'
p proc cat /proc/self/status
`)
	t.Logf("summary: rules=%d notes=%q", sum.RuleCount, sum.Notes)
	// / and /secret lose read_dir because /secret/sub (a directory) is denied;
	// /etc keeps it because /etc/shadow is a file.
	expectLines(t, res, "shadow denied", "escape-link denied", "passwd ok", "ls-etc ok", "write-shadow denied",
		"sub-more denied", "ls-sub denied", "secret-key ok", "key-link ok", "ls-secret denied", "ls-root denied",
		"tmp ok", "proc ok")
}

func TestExecRules(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	rules := Rules{ExecDeny: []string{"/opt/denied/true"}}
	res, _ := runShim(t, rootfs, rules, "sh", "-c", probe+`
p denied /opt/denied/true
p sibling /opt/denied/echo
p ok /opt/ok/true
p read-denied cat /opt/denied/true
`)
	// Reading is denied too: the dynamic loader maps what it can read.
	expectLines(t, res, "denied denied", "sibling ok", "ok ok", "read-denied denied")

	// The shim's own exec of a denied program fails like execve would.
	res, _ = runShim(t, rootfs, rules, "/opt/denied/true")
	if res.code != 126 || !strings.Contains(res.stderr, "permission denied") {
		t.Fatalf("exec of a denied program: exit %d, stderr %q; want 126 and permission denied", res.code, res.stderr)
	}

	res, _ = runShim(t, rootfs, Rules{ExecAllow: []string{"/bin"}}, "sh", "-c", probe+`
p bin ls /
p opt /opt/ok/true
`)
	expectLines(t, res, "bin ok", "opt denied")
}

func TestPathSearchAndExitCodes(t *testing.T) {
	requireLandlock(t, 1)
	rootfs := newRootfs(t)
	rules := Rules{Writable: []string{"/tmp"}}
	if res, _ := runShim(t, rootfs, rules, "echo", "found"); res.code != 0 || res.stdout != "found\n" {
		t.Fatalf("PATH search: %+v", res)
	}
	res, _ := runShim(t, rootfs, rules, "no-such-program")
	if res.code != 127 || !strings.Contains(res.stderr, "not found in $PATH") {
		t.Fatalf("missing program: %+v; want exit 127", res)
	}
	// argv[0] is the program's own, as multi-call binaries need.
	if res, _ := runShim(t, rootfs, rules, "/bin/basename", "/a/b"); res.stdout != "b\n" {
		t.Fatalf("argv[0] not preserved: %+v", res)
	}
}
