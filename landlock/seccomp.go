package landlock

import (
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// landlockSyscalls are the calls a process makes to sandbox itself. Allowing
// them is harmless: Landlock can only take rights away.
var landlockSyscalls = []string{"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"}

// AllowInSeccomp lets the exec shim work under s. Without NoNewPrivileges
// libcontainer loads the seccomp filter before the shim runs, so a profile
// that defaults to SCMP_ACT_ERRNO and predates Landlock (custom or old ones;
// the docker 20.10 and podman 4.3 defaults recorded in research already allow
// landlock_* and prctl) would make the shim fail (closed: exit 125).
// prctl(PR_SET_NO_NEW_PRIVS) is allowed too, leaving every other prctl
// option as the profile had it. A nil s (no seccomp) is left alone.
func AllowInSeccomp(s *configs.Seccomp) {
	if s == nil {
		return
	}
	for _, name := range landlockSyscalls {
		s.Syscalls = append(withoutSyscall(s.Syscalls, name), &configs.Syscall{Name: name, Action: configs.Allow})
	}
	allowNoNewPrivs(s)
}

func withoutSyscall(calls []*configs.Syscall, name string) []*configs.Syscall {
	out := calls[:0:0]
	for _, c := range calls {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// isNoNewPrivsRule reports a prctl rule matching exactly PR_SET_NO_NEW_PRIVS;
// it would conflict with ours in libseccomp.
func isNoNewPrivsRule(c *configs.Syscall) bool {
	return c.Name == "prctl" && len(c.Args) == 1 && c.Args[0].Index == 0 &&
		c.Args[0].Op == configs.EqualTo && c.Args[0].Value == unix.PR_SET_NO_NEW_PRIVS
}

func allowNoNewPrivs(s *configs.Seccomp) {
	var uncond *configs.Syscall
	rules := 0
	kept := s.Syscalls[:0:0]
	for _, c := range s.Syscalls {
		if isNoNewPrivsRule(c) && c.Action != configs.Allow {
			continue
		}
		kept = append(kept, c)
		if c.Name != "prctl" {
			continue
		}
		rules++
		if len(c.Args) == 0 {
			uncond = c
		}
	}
	s.Syscalls = kept
	for _, c := range s.Syscalls {
		if isNoNewPrivsRule(c) {
			return // already allowed
		}
	}
	switch {
	case uncond != nil && uncond.Action == configs.Allow:
		return
	case uncond == nil && rules == 0 && (s.DefaultAction == configs.Allow || s.DefaultAction == configs.Log):
		return
	}
	nnp := &configs.Syscall{Name: "prctl", Action: configs.Allow, Args: []*configs.Arg{
		{Index: 0, Value: unix.PR_SET_NO_NEW_PRIVS, Op: configs.EqualTo},
	}}
	if uncond == nil {
		s.Syscalls = append(s.Syscalls, nnp)
		return
	}
	// Split the unconditional rule so that only PR_SET_NO_NEW_PRIVS changes.
	kept = s.Syscalls[:0:0]
	for _, c := range s.Syscalls {
		if c != uncond {
			kept = append(kept, c)
		}
	}
	s.Syscalls = append(kept, nnp, &configs.Syscall{
		Name: "prctl", Action: uncond.Action, ErrnoRet: uncond.ErrnoRet,
		Args: []*configs.Arg{{Index: 0, Value: unix.PR_SET_NO_NEW_PRIVS, Op: configs.NotEqualTo}},
	})
}
