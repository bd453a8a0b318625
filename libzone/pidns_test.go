package libzone

import (
	"os"
	"strings"
	"testing"

	"github.com/rauha-runtime/rauha/zone"
)

func TestZoneOfCgroup(t *testing.T) {
	members := []zone.Container{
		{ID: "a1", Zone: "a", CgroupPath: "/pods/a1"},
		{ID: "b1", Zone: "b", CgroupPath: "/pods/a1/b1"}, // nested: the nearest wins
		{ID: "c1", Zone: "c", CgroupPath: "/pods/c"},
	}
	for p, want := range map[string]string{
		"/pods/a1":         "a",
		"/pods/a1/sub":     "a",
		"/pods/a1/b1":      "b",
		"/pods/a1/b1/x/y":  "b",
		"/pods/c":          "c",
		"/pods/cc":         "", // a prefix of the name is not an ancestor
		"/":                "",
		"":                 "",
		"/user.slice/sshd": "",
	} {
		if got, _ := zoneOfCgroup(p, members); got != want {
			t.Errorf("zoneOfCgroup(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestPidNSConflicts(t *testing.T) {
	pol := func(allowed ...string) *zone.Policy {
		return &zone.Policy{Signals: zone.Signals{AllowedZones: allowed}}
	}
	policies := map[string]*zone.Policy{
		"a": pol(), "b": pol(),
		"x": pol("y"), "y": pol("x"), // allow each other
		"one": pol("a"), // allows a, a does not allow it
	}
	for _, tc := range []struct {
		name    string
		self    string
		sharers map[string]int
		lsm     bool
		want    []string // substrings, one per conflict
	}{
		{"own zone only", "a", map[string]int{"a": 10}, false, nil},
		{"another zone on the fallback", "b", map[string]int{"a": 10}, false, []string{"shared with zone a (pid 10), whose tasks Landlock cannot keep from signalling or tracing zone b"}},
		{"another zone on bpf-lsm", "b", map[string]int{"a": 10}, true, nil},
		{"zones that allow each other", "x", map[string]int{"y": 10, "x": 11}, false, nil},
		{"a one-sided allow is not enough", "one", map[string]int{"a": 10}, false, []string{"shared with zone a"}},
		{"no zone, fallback", "a", map[string]int{"": 7}, false, []string{"tasks of no zone (pid 7)"}},
		{"no zone, bpf-lsm too", "a", map[string]int{"": 7}, true, []string{"tasks of no zone"}},
		{"several", "b", map[string]int{"": 7, "a": 10, "b": 12}, false, []string{"tasks of no zone", "zone a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pidNSConflicts(tc.self, tc.sharers, policies, tc.lsm)
			if len(got) != len(tc.want) {
				t.Fatalf("want %d conflicts %q, got %q", len(tc.want), tc.want, got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("conflict %d: want %q in %q", i, w, got[i])
				}
			}
		})
	}
}

func TestPidNSChainOfOwnNamespace(t *testing.T) {
	// The caller's own (the host's) pid namespace reaches everything
	// anyway: it is never part of a chain.
	chain, err := pidNSChain("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 0 {
		t.Fatalf("chain of the caller's own pid namespace: %v", chain)
	}
	idx, err := scanPidNS()
	if err != nil {
		t.Fatal(err)
	}
	self, err := nsInode("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, task := range idx.tasks([]uint64{self}) {
		found = found || task.pid == os.Getpid()
	}
	if !found {
		t.Fatalf("scan did not find this process (pid %d) in its own pid namespace", os.Getpid())
	}
}
