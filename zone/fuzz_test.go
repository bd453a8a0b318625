package zone

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

func FuzzParsePolicy(f *testing.F) {
	if data, err := os.ReadFile("testdata/design.toml"); err == nil {
		f.Add(data)
	}
	for _, name := range PresetNames() {
		p, _ := Preset(name)
		if data, err := toml.Marshal(p); err == nil {
			f.Add(data)
		}
	}
	for _, doc := range []string{
		"", "[zone]\nmode = \"audit\"\n", "[resources]\nmemory_limit = \"512M\"\n", "resources = { memory_limit = 1 }",
		"[network]\nallowed_egress = [\"[::1]:443\", \"10.0.0.0/8\"]\n", "[filesystem]\nwriteable_paths = []\n",
		"[capabilities]\nallowed = []\n", "[devices]\nallowed = [\"null\"]\n[syscalls]\ndeny = [\"ptrace\"]\n",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy("fuzz.toml", data, nil)
		if err != nil {
			if p != nil {
				t.Fatal("policy returned with an error")
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted policy does not validate: %v", err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Policy
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !reflect.DeepEqual(p, &back) {
			t.Fatalf("JSON round trip changed the policy:\n%#v\n%s\n%#v", p, b, &back)
		}
		if !p.Equal(&back) || !p.Equal(p.Canonical()) {
			t.Fatal("digest not stable under round trip or canonicalisation")
		}
		if err := p.Canonical().Validate(); err != nil {
			t.Fatalf("canonical policy does not validate: %v", err)
		}
		// Writing the policy back as TOML must load to the same rules.
		tb, err := toml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParsePolicy("again.toml", tb, nil)
		if err != nil {
			t.Fatalf("re-parse of\n%s\nfailed: %v", tb, err)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("TOML round trip changed the policy:\n%#v\n%s\n%#v", p, tb, again)
		}
	})
}

func FuzzParseEgress(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8:443", "::1", "[2001:db8::/32]:443", "127.0.0.1", "[::1]", "1.2.3.4:0", "[1.2.3.4]:1", "::ffff:1.2.3.4", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEgress(s)
		if err != nil {
			return
		}
		if !e.Prefix.IsValid() || e.Prefix != e.Prefix.Masked() {
			t.Fatalf("ParseEgress(%q) = invalid or unmasked prefix %v", s, e.Prefix)
		}
		back, err := ParseEgress(e.String())
		if err != nil || back != e {
			t.Fatalf("ParseEgress(%q) = %v; its String %q parses to %v, %v", s, e, e.String(), back, err)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var j Egress
		if err := json.Unmarshal(b, &j); err != nil || j != e {
			t.Fatalf("JSON round trip of %v: %s -> %v, %v", e, b, j, err)
		}
	})
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"web", "..", ".", "a/b", "", "x.y+z-1_2", "\x00"} {
		f.Add(s)
	}
	f.Add(string(make([]byte, 2048)))
	f.Add("a\x00b")
	f.Fuzz(func(t *testing.T, name string) {
		// Container ids and zone names follow one rule: a container's
		// default zone is named after its id.
		zerr, cerr := ValidateName("zone name", name), ValidateName("container id", name)
		if (zerr == nil) != (cerr == nil) {
			t.Fatalf("%q: zone name error %v, container id error %v", name, zerr, cerr)
		}
		if zerr != nil {
			if strings.Contains(zerr.Error(), "\n") {
				t.Fatalf("error is not one line: %q", zerr)
			}
			return
		}
		if len(name) == 0 || len(name) > 255 || name == "." || name == ".." {
			t.Fatalf("accepted %q", name)
		}
		// An accepted name is exactly one path component below its parent.
		if p := filepath.Join("/run/rauha", name); filepath.Dir(p) != "/run/rauha" || filepath.Base(p) != name {
			t.Fatalf("name %q escapes or changes as a path component: %q", name, p)
		}
		b, err := json.Marshal(name)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != name || !bytes.Equal(b, []byte(`"`+name+`"`)) {
			t.Fatalf("JSON round trip of %q: %s -> %q, %v", name, b, back, err)
		}
	})
}

func FuzzParseSubnet(f *testing.F) {
	for _, s := range []string{"10.5.0.0/24", "10.5.0.9/24", "fd00::/64", "10.0.0.0/7", "255.255.255.248/29", "1.2.3.4/32", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseSubnet(s)
		if err != nil {
			return
		}
		if !p.Addr().Is4() || p.Bits() < minSubnetBits || p.Bits() > maxSubnetBits || p != p.Masked() {
			t.Fatalf("ParseSubnet(%q) = %v", s, p)
		}
		// A subnet always has a gateway and a member address beside its
		// network and broadcast addresses, and parses back to itself.
		gw := Gateway(p)
		if !p.Contains(gw) || !p.Contains(gw.Next()) || !p.Contains(gw.Next().Next()) {
			t.Fatalf("ParseSubnet(%q) = %v has no room for a member", s, p)
		}
		if q, err := ParseSubnet(p.String()); err != nil || q != p {
			t.Fatalf("ParseSubnet(%v) = %v, %v", p, q, err)
		}
	})
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"8080:80/tcp", "53:53/udp,53:53/tcp", "1:65535", "80", ",,", "0:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePorts(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if p.HostPort == 0 || p.ContainerPort == 0 || (p.Protocol != "tcp" && p.Protocol != "udp") || seen[string(portKey(p))] {
				t.Fatalf("ParsePorts(%q) = %v", s, ps)
			}
			seen[string(portKey(p))] = true
			if q, err := ParsePorts(p.String()); err != nil || len(q) != 1 || q[0] != p {
				t.Fatalf("ParsePorts(%q) = %v, %v", p.String(), q, err)
			}
		}
	})
}
