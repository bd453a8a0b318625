package main

import (
	"slices"
	"testing"
)

func TestPermuteZoneArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"rauha", "zone", "create", "web", "--policy", "p.toml"}, []string{"rauha", "zone", "create", "--policy", "p.toml", "web"}},
		{[]string{"rauha", "--root", "/r", "zone", "delete", "web", "--force"}, []string{"rauha", "--root", "/r", "zone", "delete", "--force", "web"}},
		{[]string{"rauha", "--debug", "zone", "events", "web", "--follow", "--since=10m"}, []string{"rauha", "--debug", "zone", "events", "--follow", "--since=10m", "web"}},
		{[]string{"rauha", "exec", "c", "ls", "--all"}, []string{"rauha", "exec", "c", "ls", "--all"}},
		{[]string{"rauha", "zone"}, []string{"rauha", "zone"}},
	} {
		if got := permuteZoneArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("permuteZoneArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
