package zone

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var ts0 = time.Date(2026, 12, 6, 0, 41, 2, 0, time.UTC)

func ob(kind, object string) Observation {
	return Observation{Kind: kind, Object: object, Count: 2, First: ts0, Last: ts0.Add(time.Minute), Comm: "app", Container: "c1"}
}

func strict(t *testing.T) *Policy {
	t.Helper()
	p, err := Preset(PresetStrict)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// suggest runs Suggest and checks what every suggestion must satisfy: its
// TOML parses back to the same policy, and it allows the whole recording
// but what is listed as unresolved.
func suggest(t *testing.T, base *Policy, obs []Observation) *Suggestion {
	t.Helper()
	return suggestIn(t, SimulateContext{Zone: "web", Footprint: true}, base, obs)
}

func suggestIn(t *testing.T, ctx SimulateContext, base *Policy, obs []Observation) *Suggestion {
	t.Helper()
	s, err := Suggest(base, obs, ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := s.TOML("suggested for zone web")
	back, err := ParsePolicy("suggested.toml", text, nil)
	if err != nil {
		t.Fatalf("suggested TOML does not parse: %v\n%s", err, text)
	}
	if !back.Equal(s.Policy) {
		t.Fatalf("suggested TOML parses to another policy:\n%s\nparsed %+v\nwant   %+v", text, back, s.Policy)
	}
	left, err := Simulate(back, obs, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != len(s.Unresolved) {
		t.Fatalf("the suggestion still denies %+v; unresolved: %q\n%s", left, s.Unresolved, text)
	}
	return s
}

func items(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}

func TestSuggestWritesGeneraliseToBusyDirectories(t *testing.T) {
	obs := []Observation{
		ob(ObserveWrite, "/var/cache/app/a"), ob(ObserveWrite, "/var/cache/app/b"),
		ob(ObserveWrite, "/var/cache/app/sub/c"), // deeper: covered by its parent's rule
		ob(ObserveWrite, "/var/cache/app/d"),
		ob(ObserveWrite, "/run/app.pid"), ob(ObserveWrite, "/run/app.lock"), // two: stay files
		ob(ObserveWrite, "/a"), ob(ObserveWrite, "/b"), ob(ObserveWrite, "/c"), // never "/"
		ob(ObserveWrite, "/tmp/x"),                                                                    // already writable
		ob(ObserveWrite, "/dev/urandom"), ob(ObserveWrite, "/dev/tty1"), ob(ObserveWrite, "/dev/fd0"), // writable files under /dev
	}
	s := suggest(t, strict(t), obs)
	got := items(s.Policy.Filesystem.WritablePaths)
	for _, want := range []string{"/var/cache/app", "/run/app.pid", "/run/app.lock", "/a", "/b", "/c", "/tmp"} {
		if !slices.Contains(got, want) {
			t.Errorf("writable_paths %q lacks %s", got, want)
		}
	}
	for _, not := range []string{"/", "/run", "/var", "/var/cache", "/var/cache/app/sub/c", "/tmp/x", "/dev", "/dev/urandom"} {
		if slices.Contains(got, not) {
			t.Errorf("writable_paths %q has %s", got, not)
		}
	}
	text := string(s.TOML())
	if !strings.Contains(text, `"/var/cache/app", # 4 files written under it; first /var/cache/app/a by app in container c1, first 2026-12-06T00:41:02Z, 2 times, 8 times in all`) {
		t.Errorf("no comment for the generalised directory:\n%s", text)
	}
	if !strings.Contains(text, `"/run/app.pid", # written by app in container c1, first 2026-12-06T00:41:02Z, 2 times`) {
		t.Errorf("no comment for a file:\n%s", text)
	}
}

func TestSuggestWriteTreeKeepsReadOnlyAndExecutedFiles(t *testing.T) {
	base := strict(t)
	base.Filesystem.ReadOnly = []string{"/data/keep"}
	base.Exec.Allow = []string{"/bin", "/data/tools"}
	obs := []Observation{
		ob(ObserveWrite, "/data/a"), ob(ObserveWrite, "/data/b"), ob(ObserveWrite, "/data/c"),
		ob(ObserveWrite, "/srv/a"), ob(ObserveWrite, "/srv/b"), ob(ObserveWrite, "/srv/c"),
		ob(ObserveExec, "/srv/run.sh"),
	}
	s := suggest(t, base, obs)
	got := items(s.Policy.Filesystem.WritablePaths)
	if slices.Contains(got, "/data") || slices.Contains(got, "/srv") {
		t.Errorf("writable_paths %q has a tree holding a read_only path or an executed file", got)
	}
	if !slices.Contains(got, "/data/a") || !slices.Contains(got, "/srv/c") {
		t.Errorf("writable_paths %q lacks the files written", got)
	}
}

func TestSuggestExecPackageTrees(t *testing.T) {
	base := strict(t)
	base.Exec.Allow = []string{"/bin/busybox"}
	obs := []Observation{
		ob(ObserveExec, "/bin/busybox"), // allowed already
		ob(ObserveExec, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
		ob(ObserveExec, "/usr/lib/x86_64-linux-gnu/libm.so.6"),
		ob(ObserveExec, "/usr/lib/git-core/git-remote-http"),
		ob(ObserveExec, "/usr/bin/git"), ob(ObserveExec, "/usr/bin/make"), // two: files
		ob(ObserveExec, "/opt/tool/run"),
	}
	s := suggest(t, base, obs)
	want := []string{"/bin/busybox", "/opt/tool/run", "/usr/bin/git", "/usr/bin/make", "/usr/lib"}
	if got := s.Policy.Exec.Allow; !slices.Equal(got, want) {
		t.Errorf("exec.allow = %q, want %q", got, want)
	}
}

func TestSuggestEgress(t *testing.T) {
	var obs []Observation
	for i := 1; i <= EgressHostThreshold; i++ {
		obs = append(obs, ob(ObserveEgress, fmt.Sprintf("tcp 10.1.2.%d:443", i)))
	}
	obs = append(obs,
		ob(ObserveEgress, "tcp 10.9.9.1:80"), ob(ObserveEgress, "tcp 10.9.9.2:80"), ob(ObserveEgress, "udp 10.9.9.3:80"),
		ob(ObserveEgress, "tcp 10.1.2.9:80"), // the /24 is wide on 443 only
		ob(ObserveEgress, "icmp 192.0.2.7"),
		ob(ObserveEgress, "udp [fd00::1]:53"),
		ob(ObserveEgress, "tcp [::ffff:192.0.2.8]:25"), // IPv4 traffic
	)
	s := suggest(t, strict(t), obs)
	want := []string{"10.1.2.0/24:443", "10.1.2.9:80", "10.9.9.1:80", "10.9.9.2:80", "10.9.9.3:80", "192.0.2.7", "192.0.2.8:25", "[fd00::1]:53"}
	if got := items(s.Policy.Network.AllowedEgress); !slices.Equal(got, want) {
		t.Errorf("allowed_egress = %q, want %q", got, want)
	}
	// Unrestricted egress stays unrestricted.
	s = suggest(t, &Policy{Zone: ZoneSettings{Mode: ModeEnforce, Admission: AdmissionStrict}}, obs)
	if s.Policy.Network.AllowedEgress != nil {
		t.Errorf("allowed_egress = %q for a base without it", *s.Policy.Network.AllowedEgress)
	}
}

func TestSuggestRemovesAndLists(t *testing.T) {
	base := strict(t)
	base.Filesystem.Deny = []string{"/etc/shadow", "/root"}
	base.Filesystem.ReadOnly = []string{"/etc"}
	base.Exec.Deny = []string{"/usr/bin/wget"}
	obs := []Observation{
		ob(ObserveRead, "/etc/shadow"),
		ob(ObserveWrite, "/etc/motd"),
		ob(ObserveExec, "/usr/bin/wget"),
		ob(ObserveCapability, "net_raw"),
		ob(ObserveCapability, "CAP_NET_RAW"),
		ob(ObservePeerZone, "db"),
		ob(ObservePeerZone, "web"), // its own zone
		ob(ObserveSyscall, "keyctl"),
		ob(ObserveSignal, "other"),
		ob(ObservePtrace, "host"),
	}
	s := suggest(t, base, obs)
	p := s.Policy
	if !slices.Equal(p.Filesystem.Deny, []string{"/root"}) || p.Filesystem.ReadOnly != nil || p.Exec.Deny != nil {
		t.Errorf("deny %q, read_only %q, exec.deny %q: want [/root], none, none", p.Filesystem.Deny, p.Filesystem.ReadOnly, p.Exec.Deny)
	}
	if got := items(p.Capabilities.Allowed); !slices.Equal(got, []string{"NET_RAW"}) {
		t.Errorf("capabilities.allowed = %q", got)
	}
	if got := items(p.Network.AllowedZones); !slices.Equal(got, []string{"db"}) {
		t.Errorf("allowed_zones = %q", got)
	}
	if slices.Contains(p.Syscalls.Deny, "keyctl") || !slices.Contains(p.Syscalls.Deny, "add_key") {
		t.Errorf("syscalls.deny = %q", p.Syscalls.Deny)
	}
	if len(s.Unresolved) != 2 || !strings.HasPrefix(s.Unresolved[0], "signal other:") || !strings.HasPrefix(s.Unresolved[1], "ptrace host:") {
		t.Errorf("unresolved = %q, want the signal and the ptrace", s.Unresolved)
	}
	text := string(s.TOML())
	for _, want := range []string{
		`# "/etc/shadow" removed from filesystem.deny: read /etc/shadow by app`,
		`# "keyctl" removed from syscalls.deny: called by app`,
		`"NET_RAW", # exercised by app`,
		"# Recorded, but not allowed by this policy:\n#   signal other:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("TOML lacks %q:\n%s", want, text)
		}
	}
}

func TestSuggestTOMLEscapes(t *testing.T) {
	o := ob(ObserveWrite, "/tmp2/a\"b\\c\x7f\u2028")
	o.Comm = "evil\n[zone]\nmode = \"audit\""
	s := suggest(t, strict(t), []Observation{o})
	if s.Policy.Zone.Mode != ModeEnforce {
		t.Fatal("mode changed")
	}
}

// The base policy and a recording that needs every kind of widening; the
// strict preset must deny each observation by the right key.
func TestSimulateStrictDeniesEachByItsRule(t *testing.T) {
	base := strict(t)
	base.Filesystem.Deny = []string{"/etc/shadow"}
	base.Exec.Allow = []string{"/bin"}
	base.Network.AllowedZones = List()
	cases := []struct {
		o     Observation
		rule  string
		entry string
	}{
		{ob(ObserveRead, "/etc/shadow"), "filesystem.deny", "/etc/shadow"},
		{ob(ObserveWrite, "/var/log/x"), "filesystem.writable_paths", ""},
		{ob(ObserveExec, "/usr/bin/env"), "exec.allow", ""},
		{ob(ObserveExec, "/tmp/a.out"), "exec.allow", ""},
		{ob(ObserveEgress, "tcp 10.0.0.1:80"), "network.allowed_egress", ""},
		{ob(ObservePeerZone, "db"), "network.allowed_zones", ""},
		{ob(ObserveCapability, "CAP_CHOWN"), "capabilities.allowed", ""},
		{ob(ObserveSyscall, "userfaultfd"), "syscalls.deny", "userfaultfd"},
		{ob(ObserveSignal, "db"), "signals.allowed_zones", "db"},
	}
	var obs []Observation
	for _, c := range cases {
		obs = append(obs, c.o)
	}
	vs, err := Simulate(base, obs, SimulateContext{Zone: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(cases) {
		t.Fatalf("%d verdicts, want %d: %+v", len(vs), len(cases), vs)
	}
	for i, c := range cases {
		if v := vs[i]; v.Observation != c.o || v.Rule != c.rule || v.Entry != c.entry || v.Decision != DecisionDeny {
			t.Errorf("%s %s: got %+v, want rule %s entry %q", c.o.Kind, c.o.Object, v, c.rule, c.entry)
		}
	}
	// A file built under writable /tmp cannot run in a zone with exec
	// rules (noexec), and no policy of web grants a signal into db.
	s := suggest(t, base, obs)
	if len(s.Unresolved) != 2 || !strings.HasPrefix(s.Unresolved[0], "exec /tmp/a.out: ") || !strings.HasPrefix(s.Unresolved[1], "signal db: ") {
		t.Errorf("unresolved %q, want the exec under /tmp and the signal", s.Unresolved)
	}
	// A signal into a zone whose policy lists this one is allowed.
	vs, _ = Simulate(s.Policy, obs, SimulateContext{Zone: "web", SignalAllowedBy: func(z string) bool { return z == "db" }})
	if len(vs) != 1 || vs[0].Observation.Object != "/tmp/a.out" {
		t.Errorf("with the target's grant: %+v, want only /tmp/a.out denied", vs)
	}
}

func TestSimulateMirrorsEnforcement(t *testing.T) {
	p := strict(t)
	p.Exec.Deny = []string{"/usr/bin/wget"}
	p.Filesystem.ReadOnly = []string{"/tmp/keep"}
	*p.Network.AllowedEgress = []string{"10.0.0.0/8:443", "192.0.2.1", "[2001:db8::/32]:53"}
	cases := []struct {
		o        Observation
		landlock bool
		rule     string // "" allowed
	}{
		{ob(ObserveRead, "/usr/bin/wget"), true, "exec.deny"}, // Landlock cannot let it be read
		{ob(ObserveRead, "/usr/bin/wget"), false, ""},
		{ob(ObserveWrite, "/tmp/keep/x"), false, "filesystem.read_only"}, // even below a writable path
		{ob(ObserveWrite, "/tmp/x"), false, ""},
		{ob(ObserveWrite, "/tmpx"), false, "filesystem.writable_paths"},     // a tree, not a prefix
		{ob(ObserveExec, "/tmp/a.out"), false, "filesystem.writable_paths"}, // noexec with exec rules
		{ob(ObserveEgress, "tcp 10.2.3.4:443"), false, ""},
		{ob(ObserveEgress, "tcp 10.2.3.4:80"), false, "network.allowed_egress"},
		{ob(ObserveEgress, "icmp 10.2.3.4"), false, "network.allowed_egress"}, // no port: only rules without one
		{ob(ObserveEgress, "icmp 192.0.2.1"), false, ""},
		{ob(ObserveEgress, "udp [::ffff:192.0.2.1]:53"), false, ""}, // IPv4 traffic
		{ob(ObserveEgress, "udp [2001:db8::1]:53"), false, ""},
		{ob(ObserveEgress, "udp [2001:db9::1]:53"), false, "network.allowed_egress"},
		{ob(ObservePeerZone, "db"), false, "network.allowed_egress"}, // no allowed_zones: by address
		{ob(ObserveSignal, "db"), true, "signals"},                   // Landlock makes no exception
		{ob(ObserveSignal, "web"), true, ""},
		{ob(ObserveWrite, "/dev/urandom"), false, ""},      // files under /dev stay writable
		{ob(ObserveEgress, "icmp 192.0.2.1:0"), false, ""}, // port 0: none
		{ob(ObserveEgress, "proto 132 10.2.3.4:443"), false, ""},
	}
	for _, c := range cases {
		vs, err := Simulate(p, []Observation{c.o}, SimulateContext{Zone: "web", Landlock: c.landlock, SignalAllowedBy: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(vs) == 1 {
			got = vs[0].Rule
		}
		if got != c.rule {
			t.Errorf("%s %s (landlock %v): rule %q, want %q (%+v)", c.o.Kind, c.o.Object, c.landlock, got, c.rule, vs)
		}
	}
	// Without capabilities.allowed an enforcing allowed_egress drops NET_RAW.
	q := &Policy{Zone: ZoneSettings{Mode: ModeEnforce}, Network: Network{AllowedEgress: List()}}
	if vs, _ := Simulate(q, []Observation{ob(ObserveCapability, "NET_RAW")}, SimulateContext{}); len(vs) != 1 || vs[0].Rule != "network.allowed_egress" {
		t.Errorf("NET_RAW under allowed_egress: %+v", vs)
	}
}

func TestSimulateLearnModeDeniesNothing(t *testing.T) {
	p := strict(t)
	p.Zone.Mode = ModeLearn
	if vs, err := Simulate(p, []Observation{ob(ObserveWrite, "/var/x"), ob(ObserveSyscall, "keyctl")}, SimulateContext{}); len(vs) != 0 || err != nil {
		t.Errorf("learn mode: %+v, %v", vs, err)
	}
}

func TestSimulateAuditMode(t *testing.T) {
	p, _ := Preset(PresetAudit)
	p.Filesystem.Deny = []string{"/etc/shadow"}
	obs := []Observation{ob(ObserveEgress, "tcp 10.0.0.1:80"), ob(ObserveWrite, "/var/x"), ob(ObserveRead, "/etc/shadow"), ob(ObserveSyscall, "keyctl")}
	for _, landlock := range []bool{true, false} {
		vs, err := Simulate(p, obs, SimulateContext{Landlock: landlock})
		if err != nil || len(vs) != 4 {
			t.Fatalf("%+v %v", vs, err)
		}
		want := []string{DecisionAudit, DecisionDeny, DecisionDeny, DecisionDeny}
		if !landlock {
			want[2] = DecisionAudit // the LSM's deny list
		}
		for i, v := range vs {
			if v.Decision != want[i] {
				t.Errorf("landlock %v: %s %s decided %s, want %s", landlock, v.Observation.Kind, v.Observation.Object, v.Decision, want[i])
			}
		}
	}
}

func TestSimulateRejectsMalformed(t *testing.T) {
	for _, o := range []Observation{
		{Kind: ObserveWrite, Object: "var/x"}, {Kind: ObserveWrite, Object: "./x"}, {Kind: ObserveWrite, Object: "/x\x00"},
		{Kind: ObserveEgress, Object: "10.0.0.1:80"}, {Kind: ObserveEgress, Object: " 10.0.0.1:80"},
		{Kind: ObserveEgress, Object: "tcp fe80::1%eth0"}, {Kind: ObserveCapability, Object: "ALL"},
		{Kind: ObserveSyscall, Object: "Keyctl"}, {Kind: ObserveSignal, Object: "../x"}, {Kind: "open", Object: "/x"},
	} {
		if _, err := Simulate(strict(t), []Observation{o}, SimulateContext{}); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestEventObservations(t *testing.T) {
	evs := []Event{
		{Time: ts0, Control: "file", Decision: DecisionDeny, Object: "/var/log/x (permission denied)", Comm: "sh"},
		{Time: ts0.Add(time.Second), Control: "file", Decision: DecisionDeny, Object: "/var/log/x (permission denied)", Comm: "sh"},
		{Time: ts0, Control: "file", Decision: DecisionDeny, Object: "setattr /etc/passwd (permission denied)"},
		{Time: ts0, Control: "file", Decision: DecisionDeny, Object: "inode 5 on device 7"},
		{Time: ts0, Control: "exec", Decision: DecisionDeny, Object: "mmap PROT_EXEC of /tmp/lib.so (permission denied)"},
		{Time: ts0, Control: "egress", Decision: DecisionAudit, Object: "10.0.0.1:80"},
		{Time: ts0, Control: "egress", Decision: DecisionDeny, Object: "packet 10.0.0.2 icmp (operation not permitted)"},
		{Time: ts0, Control: "egress", Decision: DecisionDeny, Object: "packet [fd00::1]:53 udp"},
		{Time: ts0, Control: "egress", Decision: DecisionAudit, Object: "10.0.0.4:80", Comm: "curl"},
		{Time: ts0.Add(time.Second), Control: "egress", Decision: DecisionAudit, Object: "packet 10.0.0.4:80 tcp"}, // the connect's packets
		{Time: ts0, Control: "egress", Decision: DecisionDeny, Object: "10.0.0.3:5432", TargetZone: "db"},
		{Time: ts0, Control: "ingress", Decision: DecisionDeny, Object: "packet from 10.0.0.1:40000 tcp"},
		{Time: ts0, Control: "capability", Decision: DecisionDeny, Object: "bpf(2) command 0 without CAP_BPF or CAP_SYS_ADMIN"},
		{Time: ts0, Control: "capability", Decision: DecisionDeny, Object: "CAP_SYS_ADMIN"},
		{Time: ts0, Control: "signal", Decision: DecisionDeny, Object: "signal 9 to pid 1"},
		{Time: ts0, Control: "cgroup", Decision: DecisionDeny, Object: "cgroup.procs"},
		{Time: ts0, Control: "egress", Decision: "allow", Object: "10.0.0.9:80"},
	}
	got := EventObservations(evs)
	want := []string{
		"write /var/log/x", "write /etc/passwd", "exec /tmp/lib.so", "egress ip 10.0.0.1:80", "egress icmp 10.0.0.2",
		"egress udp [fd00::1]:53", "egress tcp 10.0.0.4:80", "peer_zone db", "capability CAP_BPF", "capability CAP_SYS_ADMIN", "signal host",
	}
	var names []string
	for _, o := range got {
		names = append(names, o.Kind+" "+o.Object)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("observations\n%q\nwant\n%q", names, want)
	}
	if got[0].Count != 2 || !got[0].Last.Equal(ts0.Add(time.Second)) || got[0].Comm != "sh" {
		t.Errorf("aggregated %+v", got[0])
	}
	if o := got[6]; o.Count != 2 || o.Comm != "curl" || !o.First.Equal(ts0) {
		t.Errorf("a connect and its packet: %+v", o)
	}
	if _, err := Simulate(strict(t), got, SimulateContext{}); err != nil {
		t.Errorf("converted observations do not simulate: %v", err)
	}
}

func TestSuggestListsMalformedAsUnresolved(t *testing.T) {
	obs := []Observation{ob(ObserveWrite, "rel/x"), ob(ObserveWrite, "/var/x")}
	s, err := Suggest(strict(t), obs, SimulateContext{Zone: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `observation write "rel/x": path "rel/x" must be absolute (paths are inside the container): no policy entry can name it`; !slices.Equal(s.Unresolved, []string{want}) {
		t.Errorf("unresolved %q, want [%q]", s.Unresolved, want)
	}
	if !slices.Contains(*s.Policy.Filesystem.WritablePaths, "/var/x") {
		t.Errorf("the well-formed write was not allowed: %q", *s.Policy.Filesystem.WritablePaths)
	}
	vs, err := Simulate(s.Policy, obs, SimulateContext{Zone: "web"})
	if len(vs) != 0 || err == nil {
		t.Errorf("simulate: %+v, %v; want no verdict and an error naming rel/x", vs, err)
	}
}

// denied_egress wins over allowed_egress in Simulate as in the kernel, and
// a recorded destination it covers takes the entry out of a suggestion.
func TestDeniedEgressInSimulateAndSuggest(t *testing.T) {
	base := strict(t)
	base.Network.AllowedEgress = List("169.254.0.0/16")
	meta := ob(ObserveEgress, "tcp 169.254.169.254:80")
	other := ob(ObserveEgress, "tcp 169.254.1.1:80")
	vs, err := Simulate(base, []Observation{meta, other}, SimulateContext{Zone: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Observation != meta || vs[0].Rule != "network.denied_egress" || vs[0].Entry != "169.254.169.254/32" {
		t.Fatalf("verdicts %+v, want only the metadata address, by denied_egress 169.254.169.254/32", vs)
	}
	s := suggest(t, base, []Observation{meta, other})
	if slices.Contains(s.Policy.Network.DeniedEgress, "169.254.169.254/32") {
		t.Errorf("denied_egress %q still holds the recorded destination", s.Policy.Network.DeniedEgress)
	}
	if !slices.Contains(s.Policy.Network.DeniedEgress, "fd00:ec2::254/128") {
		t.Errorf("denied_egress %q lost an entry nothing recorded needed", s.Policy.Network.DeniedEgress)
	}
}

// Every key of a policy survives the suggestion's TOML: a key added to
// Policy but not to the writer would be dropped from every suggestion.
func TestSuggestionTOMLWritesEveryKey(t *testing.T) {
	p := &Policy{
		Zone:         ZoneSettings{Mode: ModeEnforce, Admission: AdmissionStrict},
		Capabilities: Capabilities{Allowed: List("CAP_CHOWN")},
		Filesystem:   Filesystem{WritablePaths: List("/tmp"), ReadOnly: []string{"/tmp/ro"}, Deny: []string{"/etc/shadow"}},
		Exec:         Exec{Allow: []string{"/bin"}, Deny: []string{"/bin/su"}},
		Network: Network{Mode: NetworkBridged, Subnet: "10.9.0.0/24", AllowedEgress: List("10.0.0.0/8:443"),
			DeniedEgress: []string{"10.1.0.0/16"}, AllowedZones: List("db")},
		Signals:   Signals{AllowedZones: []string{"ops"}},
		Resources: Resources{CPUShares: 512, MemoryLimit: 1 << 30, IOWeight: 100, PidsMax: 64},
		Devices:   Devices{Allowed: List("null")},
		Syscalls:  Syscalls{Deny: []string{"keyctl"}},
	}
	text := (&Suggestion{Policy: p}).TOML("every key")
	back, err := ParsePolicy("every.toml", text, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !back.Equal(p) {
		t.Fatalf("written and read back:\n%s\nparsed %+v\nwant   %+v", text, back, p)
	}
}

// A base without exec.allow (strict) gets one that lists what a dynamically
// linked workload executed: its package trees, the dynamic loader (which
// makes admission audit, with the reason) and its own script.
func TestSuggestNarrowsExecForADynamicWorkload(t *testing.T) {
	const ld = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	obs := []Observation{
		ob(ObserveExec, "/usr/bin/bash"), ob(ObserveExec, "/usr/bin/sort"), ob(ObserveExec, "/usr/bin/sed"),
		ob(ObserveExec, ld), ob(ObserveExec, "/usr/local/bin/work"),
		ob(ObserveRead, "/etc/ld.so.cache"), ob(ObserveRead, "/lib/x86_64-linux-gnu/libc.so.6"),
		ob(ObserveWrite, "/var/lib/work/a"), ob(ObserveWrite, "/var/lib/work/b"), ob(ObserveWrite, "/var/lib/work/c"),
		ob(ObserveWrite, "/dev/null"),
	}
	s := suggest(t, strict(t), obs)
	if want := []string{"/usr/bin", ld, "/usr/local/bin/work"}; !slices.Equal(s.Policy.Exec.Allow, want) {
		t.Errorf("exec.allow = %q, want %q", s.Policy.Exec.Allow, want)
	}
	if s.Policy.Zone.Admission != AdmissionAudit {
		t.Errorf("admission %q with the loader in exec.allow, want audit", s.Policy.Zone.Admission)
	}
	if text := string(s.TOML()); !strings.Contains(text, "# the dynamic loader "+ld+" is in exec.allow (executed by app in container c1, ") ||
		!strings.Contains(text, "\nadmission = \"audit\"\n") {
		t.Errorf("the suggestion does not say why admission is audit:\n%s", text)
	}
	if w := items(s.Policy.Filesystem.WritablePaths); !slices.Contains(w, "/var/lib/work") {
		t.Errorf("writable_paths %q, want /var/lib/work", w)
	}

	// Static binaries only: no loader, admission stays strict.
	s = suggest(t, strict(t), []Observation{ob(ObserveExec, "/bin/sh"), ob(ObserveExec, "/bin/cat")})
	if want := []string{"/bin/cat", "/bin/sh"}; !slices.Equal(s.Policy.Exec.Allow, want) || s.Policy.Zone.Admission != AdmissionStrict {
		t.Errorf("exec.allow %q admission %q, want %q strict", s.Policy.Exec.Allow, s.Policy.Zone.Admission, want)
	}
}

// exec.allow is not invented where exec rules would break the workload or
// cannot close the writable places: a workload that runs what it writes
// (noexec would stop it), and a base without writable_paths.
func TestSuggestKeepsExecOpenWhereRulesWouldBreakIt(t *testing.T) {
	for name, c := range map[string]struct {
		base *Policy
		obs  []Observation
	}{
		"runs a file under /tmp": {strict(t), []Observation{ob(ObserveExec, "/bin/sh"), ob(ObserveExec, "/tmp/a.out")}},
		"runs a file it wrote":   {strict(t), []Observation{ob(ObserveExec, "/opt/x/tool"), ob(ObserveWrite, "/opt/x/tool")}},
		"base without writable_paths": {func() *Policy { p, _ := Preset(PresetStandard); return p }(),
			[]Observation{ob(ObserveExec, "/bin/sh")}},
	} {
		s := suggest(t, c.base, c.obs)
		if len(s.Policy.Exec.Allow) != 0 {
			t.Errorf("%s: exec.allow %q, want none", name, s.Policy.Exec.Allow)
		}
	}
	// Events hold only the execs a policy denied or audited, not every
	// one: an allow-list of them would deny the rest of the workload.
	s := suggestIn(t, SimulateContext{Zone: "web"}, strict(t), []Observation{ob(ObserveExec, "/opt/denied-before")})
	if len(s.Policy.Exec.Allow) != 0 {
		t.Errorf("from events: exec.allow %q, want none", s.Policy.Exec.Allow)
	}
}
