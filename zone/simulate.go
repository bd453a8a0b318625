package zone

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"
)

// SimulateContext is what Simulate needs to know besides the candidate
// policy: whose recording it replays and where it would be enforced.
type SimulateContext struct {
	// Zone is the zone the observations were recorded in: its own members
	// are never "another zone".
	Zone string
	// Landlock is true on the fallback backend, where Landlock enforces
	// every file and exec rule (none of them can be audited), also denies
	// reading an exec.deny file, and scopes signals without exceptions.
	Landlock bool
	// SignalAllowedBy reports whether zone target's own policy lists Zone in
	// its signals.allowed_zones: a signal or ptrace into another zone is
	// decided by the target's policy, not by the candidate. nil: none does.
	SignalAllowedBy func(target string) bool
	// Footprint is true when the observations are everything the workload
	// did (a learning zone's recording), not only what a policy denied or
	// audited (events): only then may Suggest narrow a base, e.g. list
	// every executed file in a new exec.allow.
	Footprint bool
}

// Verdict is what a candidate policy would do to one observation it does
// not allow.
type Verdict struct {
	Observation Observation `json:"observation"`
	// Decision is DecisionDeny, or DecisionAudit when the candidate is in
	// audit mode and the backend can audit the rule.
	Decision string `json:"decision"`
	// Rule is the key of the candidate (or, for signals, of the target
	// zone's policy) that denies it, e.g. "filesystem.writable_paths".
	Rule string `json:"rule"`
	// Entry is the entry of that key that denies it, for the deny lists
	// ("/etc" of filesystem.deny); empty for the allow-lists.
	Entry  string `json:"entry,omitempty"`
	Reason string `json:"reason"`
}

// Simulate replays a recording against a candidate policy and returns, in
// the recording's order, every observation the candidate would deny (or
// audit; a candidate in mode learn denies nothing). It mirrors the enforcement of docs/policy.md:
//
//   - a path is under a list entry when it is the entry or below it (a
//     directory is a tree); filesystem.deny denies every access,
//     filesystem.read_only every write even below a writable path, and a
//     present writable_paths every write outside its trees but under /dev
//     (the files there stay writable; an observation does not say whether
//     a file was created, which /dev does not allow);
//   - exec: filesystem.deny, then exec.deny, then a non-empty exec.allow; in
//     an enforcing zone with exec rules every writable_paths tree is
//     mounted noexec, so nothing under it runs;
//   - egress: allowed_egress entries parsed by ParseEgress and matched with
//     Egress.Contains; IPv4-mapped IPv6 destinations are IPv4; a
//     destination without a port matches only entries without one;
//   - a packet to another zone's member: allowed_zones when present, else
//     allowed_egress (the member's address is not in a peer_zone
//     observation, so any restricting allowed_egress is reported);
//   - capabilities.allowed, compared in CapabilityName spelling; without it,
//     an enforcing allowed_egress takes CAP_NET_RAW;
//   - syscalls.deny;
//   - signals and ptrace into another zone: only the target zone's
//     signals.allowed_zones grants them, and only on bpf-lsm; never to the
//     host.
//
// Malformed observations are reported in the error; the others are judged.
func Simulate(p *Policy, obs []Observation, ctx SimulateContext) ([]Verdict, error) {
	s := simulator{p: p, ctx: ctx}
	var out []Verdict
	var errs []error
	for _, o := range obs {
		o = cleanObservation(o)
		v, err := s.judge(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("observation %s %q: %w", o.Kind, o.Object, err))
			continue
		}
		if v != nil {
			v.Observation = o
			out = append(out, *v)
		}
	}
	return out, errors.Join(errs...)
}

type simulator struct {
	p   *Policy
	ctx SimulateContext
}

// Rules whose denials an audit-mode zone records and allows; the others
// are enforced by Landlock or seccomp, which cannot audit.
func (s simulator) auditable(rule string) bool {
	switch rule {
	case "network.allowed_egress", "network.allowed_zones", "network.denied_egress":
		return true
	case "filesystem.deny", "exec.deny", "signals.allowed_zones":
		return !s.ctx.Landlock // LSM hooks on bpf-lsm; Landlock on the fallback
	}
	return false
}

func (s simulator) verdict(rule, entry, format string, args ...any) *Verdict {
	if s.p.Zone.Mode == ModeLearn {
		return nil // a learning zone denies nothing
	}
	d := DecisionDeny
	if s.p.Zone.Mode == ModeAudit && s.auditable(rule) {
		d = DecisionAudit
	}
	return &Verdict{Decision: d, Rule: rule, Entry: entry, Reason: fmt.Sprintf(format, args...)}
}

func (s simulator) judge(o Observation) (*Verdict, error) {
	switch o.Kind {
	case ObserveExec, ObserveRead, ObserveWrite:
		if err := checkObservedPath(o.Object); err != nil {
			return nil, err
		}
		return s.file(o.Kind, o.Object), nil
	case ObserveEgress:
		dst, err := ParseEgressObject(o.Object)
		if err != nil {
			return nil, err
		}
		return s.egress(dst), nil
	case ObservePeerZone:
		if err := ValidateName("zone name", o.Object); err != nil {
			return nil, err
		}
		return s.peer(o.Object), nil
	case ObserveCapability:
		name, err := CapabilityName(o.Object)
		if err != nil {
			return nil, err
		}
		return s.capability(name), nil
	case ObserveSyscall:
		if !validSyscallName(o.Object) {
			return nil, fmt.Errorf("invalid syscall name")
		}
		if slices.Contains(s.p.Syscalls.Deny, o.Object) {
			return s.verdict("syscalls.deny", o.Object, "%s fails with EPERM", o.Object), nil
		}
		return nil, nil
	case ObserveSignal, ObservePtrace:
		if o.Object != "host" {
			if err := ValidateName("zone name", o.Object); err != nil {
				return nil, err
			}
		}
		return s.signal(o.Kind, o.Object), nil
	}
	return nil, fmt.Errorf("unknown kind (known: %s)", strings.Join(observationKinds, ", "))
}

var observationKinds = []string{ObserveExec, ObserveRead, ObserveWrite, ObserveEgress, ObservePeerZone,
	ObserveCapability, ObserveSignal, ObservePtrace, ObserveSyscall}

// cleanObservation cleans the path of an absolute file observation: a
// process names a file as it likes ("/var/spool/", "/usr/bin/../lib/x"),
// a policy names it clean. (Lexically: the recording holds no symlinks
// to resolve.)
func cleanObservation(o Observation) Observation {
	switch o.Kind {
	case ObserveExec, ObserveRead, ObserveWrite:
		if strings.HasPrefix(o.Object, "/") {
			o.Object = path.Clean(o.Object)
		}
	}
	return o
}

// checkObservedPath accepts what a policy path list accepts.
func checkObservedPath(p string) error {
	var err error
	checkPaths(func(_ string, _ int, format string, args ...any) { err = fmt.Errorf(format, args...) }, "", []string{p})
	return err
}

// under reports whether path is tree or lies below it.
func under(path, tree string) bool {
	return tree == "/" || path == tree || strings.HasPrefix(path, tree+"/")
}

// covering returns the first entry of trees that path is under.
func covering(trees []string, path string) (string, bool) {
	for _, t := range trees {
		if under(path, t) {
			return t, true
		}
	}
	return "", false
}

// hasExecRules mirrors the enforcement: exec rules in an enforcing zone
// make every writable place noexec.
func hasExecRules(p *Policy) bool {
	return p.Zone.Mode != ModeAudit && len(p.Exec.Allow)+len(p.Exec.Deny) > 0
}

func (s simulator) file(kind, path string) *Verdict {
	fs := s.p.Filesystem
	if e, ok := covering(fs.Deny, path); ok {
		return s.verdict("filesystem.deny", e, "%s is under the denied tree %s", path, e)
	}
	switch kind {
	case ObserveRead:
		if e, ok := covering(s.p.Exec.Deny, path); ok && s.ctx.Landlock {
			return s.verdict("exec.deny", e, "on the landlock backend an exec.deny file cannot be read either (%s)", e)
		}
	case ObserveWrite:
		if e, ok := covering(fs.ReadOnly, path); ok {
			return s.verdict("filesystem.read_only", e, "%s is under the read-only tree %s", path, e)
		}
		if fs.WritablePaths != nil && !under(path, "/dev") {
			if _, ok := covering(*fs.WritablePaths, path); !ok {
				return s.verdict("filesystem.writable_paths", "", "%s is outside every writable path", path)
			}
		}
	case ObserveExec:
		if e, ok := covering(s.p.Exec.Deny, path); ok {
			return s.verdict("exec.deny", e, "%s is under the exec-denied tree %s", path, e)
		}
		if len(s.p.Exec.Allow) > 0 {
			if _, ok := covering(s.p.Exec.Allow, path); !ok {
				return s.verdict("exec.allow", "", "%s is outside every exec.allow tree", path)
			}
		}
		if hasExecRules(s.p) && fs.WritablePaths != nil {
			if e, ok := covering(*fs.WritablePaths, path); ok {
				return s.verdict("filesystem.writable_paths", e, "%s is under the writable path %s, mounted noexec because the policy has exec rules", path, e)
			}
		}
	}
	return nil
}

// EgressObject is a parsed egress observation: "tcp 10.0.0.5:80", "udp
// [fd00::1]:53", "icmp 10.0.0.5" (a protocol without ports: Port 0).
type EgressObject struct {
	Proto string
	Addr  netip.Addr
	Port  uint16
}

// ParseEgressObject parses the Object of an egress observation. An
// IPv4-mapped IPv6 address is returned as the IPv4 address it is: the
// enforcement checks it against the IPv4 entries.
func ParseEgressObject(s string) (EgressObject, error) {
	// The protocol may be a phrase ("proto 132"); the destination is the
	// last word.
	i := strings.LastIndexByte(s, ' ')
	if i <= 0 || strings.ContainsAny(s, "\t\n") {
		return EgressObject{}, fmt.Errorf("want \"PROTO ADDR[:PORT]\", e.g. \"tcp 10.0.0.5:80\"")
	}
	proto, dst := s[:i], s[i+1:]
	if ap, err := netip.ParseAddrPort(dst); err == nil && ap.Addr().Zone() == "" {
		// Port 0: a protocol without ports, as "icmp 10.0.0.5".
		return EgressObject{Proto: proto, Addr: ap.Addr().Unmap(), Port: ap.Port()}, nil
	}
	a, err := netip.ParseAddr(dst)
	if err != nil || a.Zone() != "" {
		return EgressObject{}, fmt.Errorf("%q is not an address or address:port", dst)
	}
	return EgressObject{Proto: proto, Addr: a.Unmap()}, nil
}

// Rule is the narrowest allowed_egress entry that allows d.
func (d EgressObject) Rule() Egress {
	return Egress{Prefix: netip.PrefixFrom(d.Addr, d.Addr.BitLen()), Port: d.Port}
}

func (s simulator) egress(d EgressObject) *Verdict {
	// denied_egress wins over every allow, as in the kernel.
	denies, _ := s.p.Network.Denied() // a parsed policy has no bad entry
	for _, r := range denies {
		if r.Contains(d.Addr, d.Port) {
			return s.verdict("network.denied_egress", r.String(), "%s is in denied_egress", egressEntry(d.Rule()))
		}
	}
	rules, err := s.p.Network.Egress()
	if err != nil || rules == nil {
		return nil // absent: not restricted (a parsed policy has no bad entry)
	}
	for _, r := range rules {
		if r.Contains(d.Addr, d.Port) {
			return nil
		}
	}
	return s.verdict("network.allowed_egress", "", "%s is not in allowed_egress", egressEntry(d.Rule()))
}

func (s simulator) peer(z string) *Verdict {
	if z == s.ctx.Zone {
		return nil
	}
	n := s.p.Network
	switch {
	case n.AllowedZones != nil:
		if slices.Contains(*n.AllowedZones, z) {
			return nil
		}
		return s.verdict("network.allowed_zones", "", "zone %s is not in allowed_zones", z)
	case n.AllowedEgress != nil:
		return s.verdict("network.allowed_egress", "", "without allowed_zones a packet to a member of zone %s follows allowed_egress, and the recording has no address for it: list %s in allowed_zones", z, z)
	}
	return nil
}

func (s simulator) capability(name string) *Verdict {
	if a := s.p.Capabilities.Allowed; a != nil {
		for _, c := range *a {
			if n, _ := CapabilityName(c); n == name {
				return nil
			}
		}
		return s.verdict("capabilities.allowed", "", "%s is not in capabilities.allowed", name)
	}
	if name == "CAP_NET_RAW" && s.p.Network.AllowedEgress != nil && s.p.Zone.Mode != ModeAudit {
		return s.verdict("network.allowed_egress", "", "an enforcing allowed_egress without capabilities.allowed drops CAP_NET_RAW (list \"NET_RAW\" in capabilities.allowed to keep it)")
	}
	return nil
}

func (s simulator) signal(kind, target string) *Verdict {
	what := "signals"
	if kind == ObservePtrace {
		what = "ptrace"
	}
	switch {
	case target == s.ctx.Zone:
		return nil
	case target == "host":
		return s.verdict("signals", "", "a zone's tasks never %s tasks outside every zone", verb(kind))
	case s.ctx.Landlock:
		return s.verdict("signals", "", "on the landlock backend %s into another zone (%s) are always denied: Landlock scopes them without exceptions", what, target)
	case s.ctx.SignalAllowedBy != nil && s.ctx.SignalAllowedBy(target):
		return nil
	}
	return s.verdict("signals.allowed_zones", target, "zone %s's signals.allowed_zones does not list zone %s (the target's policy decides, not this one)", target, s.ctx.Zone)
}

func verb(kind string) string {
	if kind == ObservePtrace {
		return "ptrace"
	}
	return "signal"
}
