//go:build seccomp

package landlock

import (
	"fmt"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// TestContainerSeccomp checks, with libcontainer's seccomp support built in
// (-tags seccomp), that a profile refusing landlock_* and
// prctl(PR_SET_NO_NEW_PRIVS) makes the shim fail closed, and that
// AllowInSeccomp repairs it. (Refusing every prctl would break runc's own
// init, which reads the capability bounding set after seccomp is loaded.)
func TestContainerSeccomp(t *testing.T) {
	requireLandlock(t, 1)
	rules := Rules{Deny: []string{"/etc/shadow"}}
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("AllowInSeccomp=%v", allow), func(t *testing.T) {
			container := newContainer(t, func(c *configs.Config) {
				c.Seccomp = &configs.Seccomp{DefaultAction: configs.Allow}
				for _, name := range landlockSyscalls {
					c.Seccomp.Syscalls = append(c.Seccomp.Syscalls, &configs.Syscall{Name: name, Action: configs.Errno})
				}
				c.Seccomp.Syscalls = append(c.Seccomp.Syscalls, &configs.Syscall{Name: "prctl", Action: configs.Errno,
					Args: []*configs.Arg{{Index: 0, Value: unix.PR_SET_NO_NEW_PRIVS, Op: configs.EqualTo}}})
				if allow {
					AllowInSeccomp(c.Seccomp)
				}
			})
			out, lines := lineReader(t)
			p := &libcontainer.Process{
				Args: []string{"sh", "-c", probe + "p shadow cat /etc/shadow\necho done"},
				Env:  []string{"PATH=/bin"}, Cwd: "/", Stdout: out, Stderr: out, Init: true,
			}
			rs, _, err := CreateRuleset(rules)
			mustOK(t, err)
			defer rs.Close()
			cleanup, err := Wrap(p, rs, nil)
			mustOK(t, err)
			mustOK(t, container.Start(p))
			cleanup()
			pid, err := p.Pid()
			mustOK(t, err)
			_, err = Populate(rs, fmt.Sprintf("/proc/%d/root", pid), rules)
			mustOK(t, err)
			mustOK(t, container.Exec())
			st, _ := p.Wait()
			if allow {
				expectAll(t, readUntil(t, lines, "done"), "shadow denied")
				return
			}
			out.Close()
			var got []string
			for l := range lines {
				got = append(got, l)
			}
			if st.ExitCode() != 125 || !strings.Contains(strings.Join(got, "\n"), "cannot enter the zone's Landlock domain") {
				t.Fatalf("refused landlock: exit %d, output %q; want 125 and the shim's message", st.ExitCode(), got)
			}
		})
	}
}
