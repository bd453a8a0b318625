package zone

import (
	"testing"
)

// FuzzSimulateEvents feeds event log lines to the path simulate takes for a
// zone that is not learning: every observation made from events must be
// one Simulate accepts, and the suggestion for them must parse back and
// allow all of them but what it lists as unresolved.
func FuzzSimulateEvents(f *testing.F) {
	for _, s := range []string{
		`{"control":"file","decision":"deny","object":"/var/log/x (permission denied)","comm":"sh"}`,
		`{"control":"file","decision":"deny","object":"setattr /etc/passwd (read-only file system)"}`,
		`{"control":"exec","decision":"deny","object":"mmap PROT_EXEC of /tmp/lib.so"}`,
		`{"control":"egress","decision":"audit","object":"10.0.0.1:80"}`,
		`{"control":"egress","decision":"deny","object":"packet [fd00::1]:53 udp source-routed"}`,
		`{"control":"egress","decision":"deny","object":"packet ::ffff:10.0.0.2 icmp"}`,
		`{"control":"egress","decision":"deny","object":"10.0.0.3:5432","target_zone":"db"}`,
		`{"control":"capability","decision":"deny","object":"CAP_NET_RAW"}`,
		`{"control":"signal","decision":"deny","object":"signal 9 to pid 1","target_zone":"web"}`,
		"{\"control\":\"file\",\"decision\":\"deny\",\"object\":\"/tmp/\\\"]\\n[zone]\"}\n{\"control\":\"egress\",\"decision\":\"deny\",\"object\":\"[::1]:0\"}",
	} {
		f.Add([]byte(s + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _, _ := parseEvents(data)
		obs := EventObservations(evs)
		ctx := SimulateContext{Zone: "web"}
		base := strictPreset(ModeEnforce, AdmissionStrict)
		base.Filesystem.Deny = []string{"/etc/shadow"}
		if _, err := Simulate(base, obs, ctx); err != nil {
			t.Fatalf("an observation made from events is malformed: %v", err)
		}
		s, err := Suggest(base, obs, ctx)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePolicy("suggested.toml", s.TOML("fuzz"), nil)
		if err != nil {
			t.Fatalf("suggestion does not parse: %v\n%s", err, s.TOML())
		}
		if !back.Equal(s.Policy) {
			t.Fatalf("suggestion parses to another policy:\n%s", s.TOML())
		}
		left, err := Simulate(back, obs, ctx)
		if err != nil || len(left) != len(s.Unresolved) {
			t.Fatalf("suggestion leaves %+v denied, lists %q as unresolved (%v)", left, s.Unresolved, err)
		}
	})
}
