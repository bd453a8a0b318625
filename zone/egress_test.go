package zone

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseEgress(t *testing.T) {
	tests := []struct {
		in     string
		prefix string
		port   uint16
		str    string
	}{
		{"10.0.0.0/8:443", "10.0.0.0/8", 443, "10.0.0.0/8:443"},
		{"10.0.0.0/8", "10.0.0.0/8", 0, "10.0.0.0/8"},
		{"127.0.0.1", "127.0.0.1/32", 0, "127.0.0.1/32"},
		{"127.0.0.1:53", "127.0.0.1/32", 53, "127.0.0.1/32:53"},
		{"10.1.2.3/8", "10.0.0.0/8", 0, "10.0.0.0/8"}, // host bits cleared
		{"0.0.0.0/0:65535", "0.0.0.0/0", 65535, "0.0.0.0/0:65535"},
		{"::1", "::1/128", 0, "::1/128"},
		{"::1:443", "::1:443/128", 0, "::1:443/128"}, // bare IPv6 is never address+port
		{"2001:db8::/32", "2001:db8::/32", 0, "2001:db8::/32"},
		{"[2001:db8::/32]:443", "2001:db8::/32", 443, "[2001:db8::/32]:443"},
		{"[::1]:8080", "::1/128", 8080, "[::1/128]:8080"},
		{"[::1]", "::1/128", 0, "::1/128"},
		{"::/0", "::/0", 0, "::/0"},
		{"::ffff:10.0.0.1", "::ffff:10.0.0.1/128", 0, "::ffff:10.0.0.1/128"},
		{"1.2.3.4:0443", "1.2.3.4/32", 443, "1.2.3.4/32:443"},
	}
	for _, tt := range tests {
		e, err := ParseEgress(tt.in)
		if err != nil {
			t.Errorf("ParseEgress(%q): %v", tt.in, err)
			continue
		}
		want := Egress{Prefix: netip.MustParsePrefix(tt.prefix), Port: tt.port}
		if e != want {
			t.Errorf("ParseEgress(%q) = %+v, want %+v", tt.in, e, want)
		}
		if e.String() != tt.str {
			t.Errorf("ParseEgress(%q).String() = %q, want %q", tt.in, e.String(), tt.str)
		}
		if back, err := ParseEgress(e.String()); err != nil || back != e {
			t.Errorf("ParseEgress(%q) = %+v, %v; want %+v", e.String(), back, err, e)
		}
	}
}

func TestParseEgressErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `invalid egress "": not an IP address or CIDR prefix`},
		{"example.com:443", `invalid egress "example.com:443": not an IP address or CIDR prefix`},
		{"10.0.0.0/33", `invalid egress "10.0.0.0/33": not an IP address or CIDR prefix`},
		{"10.0.0.0/8:0", `invalid egress "10.0.0.0/8:0": port "0" must be a number 1..65535`},
		{"10.0.0.0/8:65536", `invalid egress "10.0.0.0/8:65536": port "65536" must be a number 1..65535`},
		{"10.0.0.0/8:", `invalid egress "10.0.0.0/8:": empty port after ':'`},
		{"10.0.0.0/8:-1", `invalid egress "10.0.0.0/8:-1": port "-1" must be a number 1..65535`},
		{"10.0.0.0/8:+1", `invalid egress "10.0.0.0/8:+1": port "+1" must be a number 1..65535`},
		{"[::1", `invalid egress "[::1": missing ']'`},
		{"[::1]443", `invalid egress "[::1]443": expected ':port' after ']'`},
		{"[::1]:", `invalid egress "[::1]:": expected ':port' after ']'`},
		{"[10.0.0.1]:80", `invalid egress "[10.0.0.1]:80": brackets are only for IPv6 addresses`},
		{"fe80::1%eth0", `invalid egress "fe80::1%eth0": not an IP address or CIDR prefix`},
		{"[fe80::1%eth0]:80", `invalid egress "[fe80::1%eth0]:80": not an IP address or CIDR prefix`},
		{" 10.0.0.1", `invalid egress " 10.0.0.1": not an IP address or CIDR prefix`},
		{"2001:db8::/32:443", `invalid egress "2001:db8::/32:443": not an IP address or CIDR prefix`},
	}
	for _, tt := range tests {
		_, err := ParseEgress(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseEgress(%q) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}

func TestEgressContains(t *testing.T) {
	e, _ := ParseEgress("10.0.0.0/8:443")
	if !e.Contains(netip.MustParseAddr("10.9.8.7"), 443) {
		t.Error("10.9.8.7:443 should match 10.0.0.0/8:443")
	}
	if e.Contains(netip.MustParseAddr("10.9.8.7"), 80) || e.Contains(netip.MustParseAddr("11.0.0.1"), 443) {
		t.Error("wrong port or address matched")
	}
	any, _ := ParseEgress("::1")
	if !any.Contains(netip.MustParseAddr("::1"), 1) {
		t.Error("::1 without port should match any port")
	}
}

func TestNetworkEgress(t *testing.T) {
	if got, err := (Network{}).Egress(); got != nil || err != nil {
		t.Errorf("absent egress = %v, %v; want nil, nil (unrestricted)", got, err)
	}
	got, err := Network{AllowedEgress: List()}.Egress()
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty egress = %#v, %v; want an empty non-nil slice", got, err)
	}
	got, err = Network{AllowedEgress: List("10.0.0.0/8:443", "::1")}.Egress()
	if err != nil || len(got) != 2 || got[0].Port != 443 || got[1].Prefix.Bits() != 128 {
		t.Errorf("egress = %v, %v", got, err)
	}
	if _, err := (Network{AllowedEgress: List("nope")}).Egress(); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("bad egress error = %v", err)
	}
}
