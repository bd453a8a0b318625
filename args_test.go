package main

import (
	"slices"
	"testing"
)

func TestPermuteArgs(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"rauha", "zone", "create", "web", "--policy", "p.toml"}, []string{"rauha", "zone", "create", "--policy", "p.toml", "web"}},
		{[]string{"rauha", "--root", "/r", "zone", "delete", "web", "--force"}, []string{"rauha", "--root", "/r", "zone", "delete", "--force", "web"}},
		{[]string{"rauha", "--debug", "zone", "events", "web", "--follow", "--since=10m"}, []string{"rauha", "--debug", "zone", "events", "--follow", "--since=10m", "web"}},
		{[]string{"rauha", "zone"}, []string{"rauha", "zone"}},
		// runc 1.5 takes a command's flags after its arguments...
		{[]string{"rauha", "update", "c", "--memory", "1g", "--pids-limit=5"}, []string{"rauha", "update", "--memory", "1g", "--pids-limit=5", "c"}},
		{[]string{"rauha", "delete", "c", "-f"}, []string{"rauha", "delete", "-f", "c"}},
		{[]string{"rauha", "update", "c", "--memory", "-1"}, []string{"rauha", "update", "--memory", "-1", "c"}},
		// ...and global flags after the command.
		{[]string{"rauha", "delete", "c", "--root", "/r", "--force"}, []string{"rauha", "--root", "/r", "delete", "--force", "c"}},
		{[]string{"rauha", "list", "--debug", "-q"}, []string{"rauha", "--debug", "list", "-q"}},
		// exec, kill and ps stop at the container id, as runc does.
		{[]string{"rauha", "exec", "-t", "c", "ls", "--all"}, []string{"rauha", "exec", "-t", "c", "ls", "--all"}},
		{[]string{"rauha", "exec", "c", "--env", "A=1", "sh"}, []string{"rauha", "exec", "c", "--env", "A=1", "sh"}},
		{[]string{"rauha", "kill", "c", "-KILL"}, []string{"rauha", "kill", "c", "-KILL"}},
		{[]string{"rauha", "ps", "c", "-ef"}, []string{"rauha", "ps", "c", "-ef"}},
		// "--" ends the flags; an argument like "-1" ends them too.
		{[]string{"rauha", "update", "c", "--", "--memory"}, []string{"rauha", "update", "c", "--memory"}},
		{[]string{"rauha", "zone", "inspect", "-x", "--format", "json"}, []string{"rauha", "zone", "inspect", "-x", "--format", "json"}},
		// Unknown flags are left for the CLI library to reject.
		{[]string{"rauha", "update", "c", "--bogus"}, []string{"rauha", "update", "--bogus", "c"}},
		{[]string{"rauha", "nosuch", "c", "--bogus"}, []string{"rauha", "nosuch", "c", "--bogus"}},
	} {
		if got := permuteArgs(app, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("permuteArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
