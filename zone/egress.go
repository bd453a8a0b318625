package zone

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Egress is one parsed [network] allowed_egress or denied_egress entry:
// connections to an address inside Prefix, on Port (0 = any port).
type Egress struct {
	Prefix netip.Prefix `json:"prefix"`
	Port   uint16       `json:"port,omitempty"`
}

// ParseEgress parses CIDR[:port]. The address may be a bare IP (a /32 or
// /128) or a prefix; host bits of a prefix are cleared. IPv4 takes ":port"
// directly ("10.0.0.0/8:443"); IPv6 needs brackets for a port
// ("[2001:db8::/32]:443") because a bare IPv6 string is always read as an
// address with any port ("::1:443" is the address ::1:443). Ports are
// 1..65535; leave the port out to allow any.
func ParseEgress(s string) (Egress, error) {
	addr, port, err := splitEgress(s)
	if err != nil {
		return Egress{}, fmt.Errorf("invalid egress %q: %v", s, err)
	}
	pfx, err := parseCIDR(addr)
	if err != nil {
		return Egress{}, fmt.Errorf("invalid egress %q: %v", s, err)
	}
	e := Egress{Prefix: pfx}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return Egress{}, fmt.Errorf("invalid egress %q: port %q must be a number 1..65535", s, port)
		}
		e.Port = uint16(n)
	}
	return e, nil
}

// splitEgress separates the address part from the port; port is "" when
// there is none.
func splitEgress(s string) (addr, port string, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		inner, after, found := strings.Cut(rest, "]")
		if !found {
			return "", "", fmt.Errorf("missing ']'")
		}
		if !strings.Contains(inner, ":") {
			return "", "", fmt.Errorf("brackets are only for IPv6 addresses")
		}
		if after == "" {
			return inner, "", nil
		}
		port, ok := strings.CutPrefix(after, ":")
		if !ok || port == "" {
			return "", "", fmt.Errorf("expected ':port' after ']'")
		}
		return inner, port, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		addr, port, _ := strings.Cut(s, ":")
		if port == "" {
			return "", "", fmt.Errorf("empty port after ':'")
		}
		return addr, port, nil
	default:
		return s, "", nil // bare IPv6, any port
	}
}

func parseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("not an IP address or CIDR prefix")
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("not an IP address or CIDR prefix")
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// String is the canonical form, which ParseEgress reads back to the same
// value: "10.0.0.0/8:443", "[2001:db8::/32]:443", "::1/128".
func (e Egress) String() string {
	if e.Port == 0 {
		return e.Prefix.String()
	}
	if e.Prefix.Addr().Is4() {
		return fmt.Sprintf("%s:%d", e.Prefix, e.Port)
	}
	return fmt.Sprintf("[%s]:%d", e.Prefix, e.Port)
}

// Contains reports whether a connection to addr:port matches the rule.
func (e Egress) Contains(addr netip.Addr, port uint16) bool {
	return e.Prefix.Contains(addr) && (e.Port == 0 || e.Port == port)
}

// Egress parses AllowedEgress. It returns nil when egress is unrestricted (the
// key is absent) and a non-nil, possibly empty, slice otherwise.
func (n Network) Egress() ([]Egress, error) {
	if n.AllowedEgress == nil {
		return nil, nil
	}
	out := make([]Egress, 0, len(*n.AllowedEgress))
	for _, s := range *n.AllowedEgress {
		e, err := ParseEgress(s)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Denied parses DeniedEgress; nil when it is empty.
func (n Network) Denied() ([]Egress, error) {
	var out []Egress
	for _, s := range n.DeniedEgress {
		e, err := ParseEgress(s)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
