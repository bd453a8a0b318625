package landlock

import (
	"fmt"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

func render(s *configs.Seccomp) []string {
	var out []string
	for _, c := range s.Syscalls {
		r := fmt.Sprintf("%s:%d", c.Name, c.Action)
		for _, a := range c.Args {
			r += fmt.Sprintf(" arg%d op%d %d", a.Index, a.Op, a.Value)
		}
		out = append(out, r)
	}
	return out
}

func TestAllowInSeccomp(t *testing.T) {
	AllowInSeccomp(nil) // no profile: nothing to do, no panic

	allow, errno := int(configs.Allow), int(configs.Errno)
	nnp := unix.PR_SET_NO_NEW_PRIVS
	landlock := []string{
		fmt.Sprintf("landlock_create_ruleset:%d", allow),
		fmt.Sprintf("landlock_add_rule:%d", allow),
		fmt.Sprintf("landlock_restrict_self:%d", allow),
	}
	for _, tc := range []struct {
		name string
		in   *configs.Seccomp
		want []string
	}{
		{"docker-like: prctl allowed, landlock missing",
			&configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{
				{Name: "prctl", Action: configs.Allow}, {Name: "read", Action: configs.Allow}}},
			append([]string{fmt.Sprintf("prctl:%d", allow), fmt.Sprintf("read:%d", allow)}, landlock...)},
		{"landlock explicitly refused",
			&configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{
				{Name: "landlock_restrict_self", Action: configs.Errno}}},
			landlock},
		{"prctl refused unconditionally",
			&configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{
				{Name: "prctl", Action: configs.Errno}}},
			append(append([]string{}, landlock...),
				fmt.Sprintf("prctl:%d arg0 op%d %d", allow, configs.EqualTo, nnp),
				fmt.Sprintf("prctl:%d arg0 op%d %d", errno, configs.NotEqualTo, nnp))},
		{"prctl not listed, default errno",
			&configs.Seccomp{DefaultAction: configs.Errno},
			append(append([]string{}, landlock...), fmt.Sprintf("prctl:%d arg0 op%d %d", allow, configs.EqualTo, nnp))},
		{"prctl(PR_SET_NO_NEW_PRIVS) refused",
			&configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{
				{Name: "prctl", Action: configs.Errno, Args: []*configs.Arg{{Index: 0, Value: uint64(nnp), Op: configs.EqualTo}}}}},
			landlock}, // the refusal is dropped and the default allows
		{"prctl allowed for some options only",
			&configs.Seccomp{DefaultAction: configs.Errno, Syscalls: []*configs.Syscall{
				{Name: "prctl", Action: configs.Allow, Args: []*configs.Arg{{Index: 0, Value: unix.PR_SET_NAME, Op: configs.EqualTo}}}}},
			append(append([]string{fmt.Sprintf("prctl:%d arg0 op%d %d", allow, configs.EqualTo, unix.PR_SET_NAME)}, landlock...),
				fmt.Sprintf("prctl:%d arg0 op%d %d", allow, configs.EqualTo, nnp))},
	} {
		AllowInSeccomp(tc.in)
		if got := render(tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
