package zone

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func mustParse(t *testing.T, doc string) *Policy {
	t.Helper()
	p, err := ParsePolicy("policy.toml", []byte(doc), nil)
	if err != nil {
		t.Fatalf("ParsePolicy: %v\n%s", err, doc)
	}
	return p
}

// A policy using the keys of docs/policy.md, in the annotated form the
// design started from (testdata/design.toml), must load unchanged.
func TestParseDesignPolicy(t *testing.T) {
	data, err := os.ReadFile("testdata/design.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy("design.toml", data, nil)
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	want := &Policy{
		Zone:         ZoneSettings{Mode: ModeEnforce, Admission: AdmissionStrict},
		Capabilities: Capabilities{Allowed: List("NET_BIND_SERVICE", "CHOWN")},
		Filesystem:   Filesystem{WritablePaths: List("/tmp"), ReadOnly: []string{"/etc"}, Deny: []string{"/etc/shadow"}},
		Exec:         Exec{Deny: []string{"/bin/ping"}},
		Network: Network{
			Mode:          NetworkIsolated,
			AllowedEgress: List("10.0.0.0/8:443", "::1", "[2001:db8::/32]:443", "127.0.0.1"),
			AllowedZones:  List(),
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", p, want)
	}
	eg, err := p.Network.Egress()
	if err != nil || len(eg) != 4 || eg[2].Port != 443 || eg[2].Prefix.String() != "2001:db8::/32" {
		t.Fatalf("egress = %v, %v", eg, err)
	}
}

func TestParsePolicyGood(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		check func(*Policy) bool
	}{
		{"empty document gets safe defaults", "",
			func(p *Policy) bool {
				return p.Zone.Mode == ModeEnforce && p.Zone.Admission == AdmissionStrict &&
					p.Capabilities.Allowed == nil && p.Network.AllowedEgress == nil
			}},
		{"audit mode", "[zone]\nmode = \"audit\"\nadmission = \"audit\"\n",
			func(p *Policy) bool { return p.Zone.Mode == ModeAudit && p.Zone.Admission == AdmissionAudit }},
		{"empty capability list means none", "[capabilities]\nallowed = []\n",
			func(p *Policy) bool { return p.Capabilities.Allowed != nil && len(*p.Capabilities.Allowed) == 0 }},
		{"capability spellings", "[capabilities]\nallowed = [\"CAP_CHOWN\", \"net_raw\", \"Sys_Admin\", \"CAP_BPF\", \"CHECKPOINT_RESTORE\"]\n",
			func(p *Policy) bool { return len(*p.Capabilities.Allowed) == 5 }},
		{"empty egress means none", "[network]\nallowed_egress = []\n",
			func(p *Policy) bool { return p.Network.AllowedEgress != nil && len(*p.Network.AllowedEgress) == 0 }},
		{"empty plain lists are absent", "[exec]\nallow = []\ndeny = []\n[syscalls]\ndeny = []\n",
			func(p *Policy) bool { return p.Exec.Allow == nil && p.Exec.Deny == nil && p.Syscalls.Deny == nil }},
		{"resources with size string", "[resources]\ncpu_shares = 512\nmemory_limit = \"512M\"\nio_weight = 100\npids_max = 64\n",
			func(p *Policy) bool {
				return p.Resources == Resources{CPUShares: 512, MemoryLimit: 512 << 20, IOWeight: 100, PidsMax: 64}
			}},
		{"memory limit in bytes", "[resources]\nmemory_limit = 1048576\n",
			func(p *Policy) bool { return p.Resources.MemoryLimit == 1<<20 }},
		{"memory limit with MiB", "[resources]\nmemory_limit = \"2GiB\"\n",
			func(p *Policy) bool { return p.Resources.MemoryLimit == 2<<30 }},
		{"devices and syscalls", "[devices]\nallowed = [\"null\", \"zero\", \"urandom\", \"net/tun\"]\n[syscalls]\ndeny = [\"kexec_load\", \"open_by_handle_at\"]\n",
			func(p *Policy) bool { return len(*p.Devices.Allowed) == 4 && len(p.Syscalls.Deny) == 2 }},
		{"empty device list", "[devices]\nallowed = []\n",
			func(p *Policy) bool { return p.Devices.Allowed != nil && len(*p.Devices.Allowed) == 0 }},
		{"zones", "[network]\nallowed_zones = [\"db\"]\n[signals]\nallowed_zones = [\"ops\", \"debug.1\"]\n",
			func(p *Policy) bool {
				return p.Network.AllowedZones != nil && len(*p.Network.AllowedZones) == 1 && len(p.Signals.AllowedZones) == 2
			}},
		{"dotted and inline keys", "zone.mode = \"audit\"\nresources = { pids_max = 5 }\n",
			func(p *Policy) bool { return p.Zone.Mode == ModeAudit && p.Resources.PidsMax == 5 }},
		{"network modes", "[network]\nmode = \"host\"\n",
			func(p *Policy) bool { return p.Network.Mode == NetworkHost }},
		{"root path", "[filesystem]\nread_only = [\"/\"]\n",
			func(p *Policy) bool { return p.Filesystem.ReadOnly[0] == "/" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.doc)
			if !tt.check(p) {
				t.Fatalf("unexpected policy %+v", p)
			}
			assertJSONRoundTrip(t, p)
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"[zone]\nmode = \"enforce\"\n\n[filesystem]\nwritable_paths = [\"/tmp\"]\n\nwriteable_paths = [\"/tmp\"]\n",
			`policy.toml: line 7: unknown key "filesystem.writeable_paths"`},
		{"[filesystem]\nwriteable_paths = []\n[foo]\nbar = 1\n[zone]\nmodes = \"x\"\n",
			"policy.toml: line 2: unknown key \"filesystem.writeable_paths\"\n" +
				"policy.toml: line 3: unknown key \"foo\"\n" +
				"policy.toml: line 6: unknown key \"zone.modes\""},
		{"top = 1\n", `policy.toml: line 1: unknown key "top"`},
		{"[zone]\nmode = \"enforce\"\nextra.key = 1\n", `policy.toml: line 3: unknown key "zone.extra.key"`},
		{"[zone]\nmode = \"block\"\n", `policy.toml: line 2: zone.mode: must be "enforce", "audit" or "learn", not "block"`},
		{"[zone]\nadmission = \"lax\"\n", `policy.toml: line 2: zone.admission: must be "strict" or "audit", not "lax"`},
		{"[zone]\nmode = 5\n", `policy.toml: line 2: zone.mode: expected a string, got a TOML integer`},
		{"zone = \"x\"\n", `policy.toml: line 1: zone: expected a table, got a TOML string`},
		{"[[zone]]\n", `policy.toml: line 1: zone: expected a table, got an array of tables`},
		{"[capabilities]\nallowed = \"CHOWN\"\n", `policy.toml: line 2: capabilities.allowed: expected an array of strings, got a TOML string`},
		{"[capabilities]\nallowed = [1]\n", `policy.toml: line 2: capabilities.allowed: expected an array of strings, got a TOML integer`},
		{"[capabilities]\nallowed = [\"CHOWN\",\n  \"NET_FLY\"]\n", `policy.toml: line 3: capabilities.allowed: unknown capability "NET_FLY"`},
		{"[capabilities]\nallowed = [\"ALL\"]\n", `policy.toml: line 2: capabilities.allowed: capability "ALL": a policy lists capabilities one by one, "ALL" is not allowed`},
		{"[capabilities]\nallowed = [\"CAP_ALL\"]\n", `policy.toml: line 2: capabilities.allowed: capability "CAP_ALL": a policy lists capabilities one by one, "ALL" is not allowed`},
		{"[filesystem]\nwritable_paths = [\"tmp\"]\n", `policy.toml: line 2: filesystem.writable_paths: path "tmp" must be absolute (paths are inside the container)`},
		{"[filesystem]\nread_only = [\"/etc/\"]\n", `policy.toml: line 2: filesystem.read_only: path "/etc/" is not clean; write "/etc"`},
		{"[filesystem]\ndeny = [\"/a/../etc/shadow\"]\n", `policy.toml: line 2: filesystem.deny: path "/a/../etc/shadow" is not clean; write "/etc/shadow"`},
		{"[filesystem]\ndeny = [\"/etc/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]\n", `policy.toml: line 2: filesystem.deny: the last name of "/etc/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" is 64 bytes long, at most 63 are supported: deny its directory instead`},
		{"[exec]\ndeny = [\"\"]\n", `policy.toml: line 2: exec.deny: path "" must be absolute (paths are inside the container)`},
		{"[exec]\nallow = [\"/bin/a\\u0000\"]\n", `policy.toml: line 2: exec.allow: path "/bin/a\x00" contains invalid UTF-8 or a NUL byte`},
		{"[network]\nmode = \"bridge\"\n", `policy.toml: line 2: network.mode: must be "isolated", "bridged" or "host", not "bridge"`},
		{"[network]\nallowed_egress = [\n  \"10.0.0.0/8:443\",\n  \"example.com\",\n]\n",
			`policy.toml: line 4: network.allowed_egress: invalid egress "example.com": not an IP address or CIDR prefix`},
		{"[network]\nallowed_zones = [\"../x\"]\n", `policy.toml: line 2: network.allowed_zones: invalid zone name "../x": must match [A-Za-z0-9_+.-]{1,255} and not be "." or ".."`},
		{"[signals]\nallowed_zones = [\"..\"]\n", `policy.toml: line 2: signals.allowed_zones: invalid zone name "..": must match [A-Za-z0-9_+.-]{1,255} and not be "." or ".."`},
		{"[resources]\ncpu_shares = -1\n", `policy.toml: line 2: resources.cpu_shares: -1 out of range: 0 (unset) or 2..262144`},
		{"[resources]\nio_weight = 10001\n", `policy.toml: line 2: resources.io_weight: 10001 out of range: 0 (unset) or 1..10000`},
		{"[resources]\npids_max = -5\n", `policy.toml: line 2: resources.pids_max: -5 must not be negative (0 = unset)`},
		{"[resources]\nmemory_limit = -1\n", `policy.toml: line 2: resources.memory_limit: -1 must not be negative (0 = unset)`},
		{"[resources]\nmemory_limit = \"12X\"\n", `policy.toml: line 2: resources.memory_limit: invalid size "12X": want bytes or a number with a unit K, M, G, T or P (binary, e.g. "512M", "1.5g")`},
		{"[resources]\n\nmemory_limit = 1.5\n", `policy.toml: line 3: resources.memory_limit: invalid size "1.5": want bytes or a number with a unit K, M, G, T or P (binary, e.g. "512M", "1.5g")`},
		{"resources = { memory_limit = true }\n", `policy.toml: line 1: resources.memory_limit: invalid size "true": want bytes or a number with a unit K, M, G, T or P (binary, e.g. "512M", "1.5g")`},
		{"[resources]\nmemory_limit = [1]\n", `policy.toml: line 2: resources.memory_limit: expected an integer (bytes) or a size string like "512M", got a TOML array`},
		{"[resources]\npids_max = \"5\"\n", `policy.toml: line 2: resources.pids_max: expected an integer, got a TOML string`},
		{"[devices]\nallowed = [\"sda\"]\n", `policy.toml: line 2: devices.allowed: unknown device "sda" (known: console, full, fuse, kvm, net/tun, null, ptmx, pts, random, tty, urandom, zero)`},
		{"[syscalls]\ndeny = [\"Kexec\"]\n", `policy.toml: line 2: syscalls.deny: invalid syscall name "Kexec": must match [a-z_][a-z0-9_]{0,63}`},
		{"[syscalls]\ndeny = [\"1open\"]\n", `policy.toml: line 2: syscalls.deny: invalid syscall name "1open": must match [a-z_][a-z0-9_]{0,63}`},
		{"[zone\n", `policy.toml: line 1: expected ']' to close table name`},
		{"[zone]\nmode = \"audit\"\nmode = \"enforce\"\n", `policy.toml: line 3: key mode is already defined`},
		{"[zone]\nmode = \"x\"\n[capabilities]\nallowed = [\"NOPE\"]\n",
			"policy.toml: line 2: zone.mode: must be \"enforce\", \"audit\" or \"learn\", not \"x\"\n" +
				"policy.toml: line 4: capabilities.allowed: unknown capability \"NOPE\""},
	}
	for _, tt := range tests {
		p, err := ParsePolicy("policy.toml", []byte(tt.doc), nil)
		if err == nil {
			t.Errorf("ParsePolicy(%q) = %+v, want error %s", tt.doc, p, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParsePolicy(%q)\n error %s\n want  %s", tt.doc, err, tt.want)
		}
	}
}

func TestValidateFieldErrors(t *testing.T) {
	p := &Policy{Zone: ZoneSettings{Mode: ModeEnforce, Admission: AdmissionStrict},
		Capabilities: Capabilities{Allowed: List("CHOWN", "BOGUS")}}
	err := p.Validate()
	if err == nil {
		t.Fatal("Validate accepted an unknown capability")
	}
	if err.Error() != `capabilities.allowed: unknown capability "BOGUS"` {
		t.Fatalf("error = %q", err)
	}
	if (&Policy{}).Validate() == nil {
		t.Fatal("a zero Policy has no mode and must not validate")
	}
}

func TestByteSize(t *testing.T) {
	good := map[string]ByteSize{
		"0": 0, "4096": 4096, "512M": 512 << 20, "512m": 512 << 20, "512MB": 512 << 20,
		"512MiB": 512 << 20, "1k": 1024, "1G": 1 << 30, "2T": 2 << 40, "1P": 1 << 50, "7B": 7,
		// update --memory's syntax (go-units), which docker and podman send.
		"1.5G": 3 << 29, "1 G": 1 << 30, "64kb": 64 << 10,
	}
	for in, want := range good {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1", "1X", "1iB", "1MiBB", "1..5G", "1.5", "1.5B", "99999999999999999999", "9000000P"} {
		if got, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", in, got)
		}
	}
	var r Resources
	if err := json.Unmarshal([]byte(`{"memory_limit":"1G"}`), &r); err != nil || r.MemoryLimit != 1<<30 {
		t.Errorf("JSON size string: %d, %v", r.MemoryLimit, err)
	}
	if err := json.Unmarshal([]byte(`{"memory_limit":2048}`), &r); err != nil || r.MemoryLimit != 2048 {
		t.Errorf("JSON size integer: %d, %v", r.MemoryLimit, err)
	}
	if err := json.Unmarshal([]byte(`{"memory_limit":true}`), &r); err == nil {
		t.Error("JSON size bool accepted")
	}
}

func TestCapabilityName(t *testing.T) {
	for in, want := range map[string]string{"chown": "CAP_CHOWN", "CAP_NET_ADMIN": "CAP_NET_ADMIN", "cap_bpf": "CAP_BPF"} {
		if got, err := CapabilityName(in); err != nil || got != want {
			t.Errorf("CapabilityName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "CAP_", "all", "CAP_NOPE", "CAP_CAP_CHOWN"} {
		if _, err := CapabilityName(in); err == nil {
			t.Errorf("CapabilityName(%q) accepted", in)
		}
	}
}

func assertJSONRoundTrip(t *testing.T, p *Policy) {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if !reflect.DeepEqual(p, &back) {
		t.Fatalf("JSON round trip changed the policy:\n%+v\n%s\n%+v", p, b, &back)
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("round-tripped policy does not validate: %v", err)
	}
}

// Absent and empty lists mean different things and must survive storage.
func TestJSONAbsentVersusEmpty(t *testing.T) {
	absent := mustParse(t, "")
	empty := mustParse(t, "[capabilities]\nallowed = []\n[filesystem]\nwritable_paths = []\n[network]\nallowed_egress = []\n[devices]\nallowed = []\n")
	for _, p := range []*Policy{absent, empty} {
		assertJSONRoundTrip(t, p)
	}
	b, _ := json.Marshal(empty)
	for _, key := range []string{`"allowed":[]`, `"writable_paths":[]`, `"allowed_egress":[]`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
	b, _ = json.Marshal(absent)
	for _, key := range []string{"allowed", "writable_paths", "allowed_egress"} {
		if strings.Contains(string(b), key) {
			t.Errorf("JSON %s of an absent list mentions %s", b, key)
		}
	}
	if absent.Equal(empty) {
		t.Fatal("absent and empty lists compare equal")
	}
}

func TestDigestAndEqual(t *testing.T) {
	a := mustParse(t, "[capabilities]\nallowed = [\"CHOWN\", \"cap_kill\"]\n[network]\nallowed_egress = [\"10.1.2.3/8:443\", \"::1\"]\n[exec]\ndeny = [\"/b\", \"/a\", \"/a\"]\n")
	b := mustParse(t, "[exec]\ndeny = [\"/a\", \"/b\"]\n[network]\nallowed_egress = [\"[::1]\", \"10.0.0.0/8:443\"]\n[capabilities]\nallowed = [\"CAP_KILL\", \"CAP_CHOWN\"]\n")
	if !a.Equal(b) || a.Digest() != b.Digest() {
		t.Fatalf("equivalent policies differ:\n%+v\n%+v", a.Canonical(), b.Canonical())
	}
	if len(a.Digest()) != 64 {
		t.Fatalf("digest %q is not hex sha256", a.Digest())
	}
	c := a.Clone()
	*c.Capabilities.Allowed = append(*c.Capabilities.Allowed, "NET_RAW")
	if a.Equal(c) {
		t.Fatal("adding a capability did not change the digest")
	}
	if len(*a.Capabilities.Allowed) != 2 {
		t.Fatal("Clone shares the capability list with the original")
	}
	d := a.Clone()
	d.Zone.Mode = ModeAudit
	if a.Equal(d) {
		t.Fatal("changing the mode did not change the digest")
	}
	canon := a.Canonical()
	if got := *canon.Capabilities.Allowed; !slices.Equal(got, []string{"CAP_CHOWN", "CAP_KILL"}) {
		t.Fatalf("canonical capabilities %v", got)
	}
	if got := *a.Capabilities.Allowed; !slices.Equal(got, []string{"CHOWN", "cap_kill"}) {
		t.Fatalf("Canonical modified the original: %v", got)
	}
	var nilP *Policy
	if !nilP.Equal(nil) || nilP.Equal(a) || a.Equal(nil) {
		t.Fatal("nil handling of Equal")
	}
}

func TestPresets(t *testing.T) {
	if got := PresetNames(); !slices.Equal(got, []string{"strict", "standard", "privileged", "audit"}) {
		t.Fatalf("PresetNames = %v", got)
	}
	for _, name := range PresetNames() {
		p, err := Preset(name)
		if err != nil {
			t.Fatalf("Preset(%q): %v", name, err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("preset %s does not validate: %v", name, err)
		}
		assertJSONRoundTrip(t, p)
		if len(p.Signals.AllowedZones) != 0 {
			t.Errorf("preset %s lets other zones signal it", name)
		}
	}
	std, _ := Preset("standard")
	if std.Zone.Mode != ModeEnforce || std.Zone.Admission != AdmissionAudit {
		t.Errorf("standard zone settings %+v", std.Zone)
	}
	if std.Capabilities.Allowed != nil {
		t.Errorf("standard must keep the capabilities the client asked for (docker --cap-add, podman --privileged), got %v", *std.Capabilities.Allowed)
	}
	if std.Network.AllowedEgress != nil || std.Filesystem.WritablePaths != nil || len(std.Filesystem.Deny) != 0 || len(std.Exec.Deny) != 0 {
		t.Errorf("standard restricts more than cross-zone signals: %+v", std)
	}
	if !slices.Equal(std.Syscalls.Deny, standardDeniedSyscalls()) || slices.Contains(std.Syscalls.Deny, "bpf") {
		t.Errorf("standard syscalls.deny = %v, want %v", std.Syscalls.Deny, standardDeniedSyscalls())
	}
	strict, _ := Preset("strict")
	if strict.Zone.Admission != AdmissionStrict || strict.Zone.Mode != ModeEnforce {
		t.Errorf("strict zone settings %+v", strict.Zone)
	}
	if strict.Capabilities.Allowed == nil || len(*strict.Capabilities.Allowed) != 0 {
		t.Errorf("strict must allow no capabilities")
	}
	if strict.Network.AllowedEgress == nil || len(*strict.Network.AllowedEgress) != 0 {
		t.Errorf("strict must allow no egress")
	}
	if strict.Filesystem.WritablePaths == nil || !slices.Contains(*strict.Filesystem.WritablePaths, "/tmp") {
		t.Errorf("strict must make the tree read-only except /tmp")
	}
	for _, name := range std.Syscalls.Deny {
		if !slices.Contains(strict.Syscalls.Deny, name) {
			t.Errorf("strict allows %s, which standard denies", name)
		}
	}
	audit, _ := Preset("audit")
	if audit.Zone.Mode != ModeAudit || audit.Zone.Admission != AdmissionAudit {
		t.Errorf("audit zone settings %+v", audit.Zone)
	}
	a2 := audit.Clone()
	a2.Zone = strict.Zone
	if !a2.Equal(strict) {
		t.Error("audit should be strict's rules with audit modes")
	}
	priv, _ := Preset("privileged")
	if priv.Capabilities.Allowed != nil || priv.Network.AllowedEgress != nil || priv.Zone.Admission != AdmissionAudit {
		t.Errorf("privileged restricts too much: %+v", priv)
	}
	if len(priv.Syscalls.Deny) != 0 || priv.Equal(std) {
		t.Errorf("privileged must deny no syscall: %v", priv.Syscalls.Deny)
	}
	// Presets are fresh copies of the deny list too.
	std.Syscalls.Deny[0] = "x"
	if std2, _ := Preset("standard"); std2.Syscalls.Deny[0] == "x" {
		t.Error("Preset shares the standard deny list")
	}
	// Presets are fresh copies: changing one must not change the next.
	*strict.Filesystem.WritablePaths = append(*strict.Filesystem.WritablePaths, "/x")
	again, _ := Preset("strict")
	if slices.Contains(*again.Filesystem.WritablePaths, "/x") {
		t.Error("Preset returned shared state")
	}
	if _, err := Preset("lax"); err == nil || err.Error() != `unknown policy preset "lax" (presets: strict, standard, privileged, audit)` {
		t.Errorf("unknown preset error = %v", err)
	}
}

func TestLoadPolicy(t *testing.T) {
	p, src, err := LoadPolicy("strict", nil)
	if err != nil || src != "preset:strict" || p.Zone.Admission != AdmissionStrict {
		t.Fatalf("LoadPolicy(strict) = %+v, %q, %v", p, src, err)
	}
	if _, src, err = LoadPolicy("preset:audit", nil); err != nil || src != "preset:audit" {
		t.Fatalf("LoadPolicy(preset:audit) = %q, %v", src, err)
	}
	if _, _, err = LoadPolicy("preset:nope", nil); err == nil {
		t.Fatal("LoadPolicy(preset:nope) accepted")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "web.toml")
	if err := os.WriteFile(file, []byte("[zone]\nmode = \"audit\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, src, err = LoadPolicy(file, nil)
	if err != nil || src != "file:"+file || p.Zone.Mode != ModeAudit {
		t.Fatalf("LoadPolicy(file) = %+v, %q, %v", p, src, err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[zone]\nmood = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err = LoadPolicy(bad, nil); err == nil || err.Error() != bad+`: line 2: unknown key "zone.mood"` {
		t.Fatalf("LoadPolicy(bad) error = %v", err)
	}
	if _, _, err = LoadPolicy(filepath.Join(dir, "missing"), nil); err == nil || !strings.Contains(err.Error(), "not a preset") {
		t.Fatalf("LoadPolicy(missing) error = %v", err)
	}
	if _, _, err = LoadPolicy("", nil); err == nil {
		t.Fatal("LoadPolicy(\"\") accepted")
	}
}

// TestLoadAnnotationPolicyRefuses covers the rules for policy files a bundle
// names: each case must fail at once (a FIFO must not block) with an error
// that names the reason and never the file's content.
func TestLoadAnnotationPolicyRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	private := write("private.toml", []byte("SECRET-CONTENT = [\n"), 0o640)
	huge := write("huge.toml", bytes.Repeat([]byte("#"), maxPolicySize+1), 0o644)
	fifo := filepath.Join(dir, "fifo.toml")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ref, want string }{
		{private, "not world-readable"},
		{link, "not world-readable"},
		{huge, "more than the 1024 KiB"},
		{fifo, "not a regular file (a FIFO)"},
		{"/dev/zero", "not a regular file (a device)"},
		{dir, "not a regular file (a directory)"},
	} {
		_, _, err := LoadAnnotationPolicy(c.ref, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("LoadAnnotationPolicy(%s) error = %v, want %q", c.ref, err, c.want)
		}
	}
	// The command line names its own files: a private one is fine there.
	if _, _, err := LoadPolicy(private, nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("LoadPolicy(private, nil) error = %v, want a parse error", err)
	}
	ok := write("ok.toml", []byte("[zone]\nmode = \"audit\"\n"), 0o644)
	if p, _, err := LoadAnnotationPolicy(ok, nil); err != nil || p.Zone.Mode != ModeAudit {
		t.Errorf("LoadAnnotationPolicy(ok, nil) = %v, %v", p, err)
	}
}

func TestLookupDevice(t *testing.T) {
	d, ok := LookupDevice("null")
	if !ok || d.Type != "c" || d.Major != 1 || d.Minor != 3 {
		t.Fatalf("LookupDevice(null) = %+v, %v", d, ok)
	}
	if _, ok := LookupDevice("/dev/null"); ok {
		t.Fatal("device names are relative to /dev")
	}
}

// TestParsePolicyUnknownSyscall checks a misspelt [syscalls] deny name is an
// error at its line when the caller can tell (libzone passes libseccomp).
func TestParsePolicyUnknownSyscall(t *testing.T) {
	known := func(name string) bool { return name == "ptrace" || name == "kexec_load" }
	doc := "[syscalls]\ndeny = [\n  \"ptrace\",\n  \"ptarce\",\n]\n"
	_, err := ParsePolicy("policy.toml", []byte(doc), known)
	want := `policy.toml: line 4: syscalls.deny: unknown syscall "ptarce": libseccomp does not know it`
	if err == nil || err.Error() != want {
		t.Errorf("ParsePolicy: %v, want %s", err, want)
	}
	if _, err := ParsePolicy("policy.toml", []byte(doc), nil); err != nil {
		t.Errorf("without a checker names are checked by form only: %v", err)
	}
	if _, err := ParsePolicy("policy.toml", []byte("[syscalls]\ndeny = [\"kexec_load\"]\n"), known); err != nil {
		t.Errorf("known name refused: %v", err)
	}
}
