package zone

import (
	"net/netip"
	"regexp"
	"strings"
)

// EventObservations turns a zone's deny and audit events into the
// observations of a recording, aggregated by kind and object, so that a
// zone that is not learning can be simulated from its event log. Events of
// other decisions, and those naming nothing a policy can allow (cgroup and
// resources refusals, inodes the engine could not name), are left out.
//
// Events say less than a learning zone records:
//   - a file event does not say whether the open was for reading or for
//     writing: a path (or a metadata change of it) becomes a write, the
//     stricter of the two, so that a replay never misses a denial;
//   - a connect event does not name the protocol: "ip ADDR:PORT", unless
//     the packets it sent were recorded too (audit mode), which do;
//   - a packet to (or from) another zone's member becomes a peer_zone
//     observation of that zone;
//   - bpf(2) refused to a member without CAP_BPF or CAP_SYS_ADMIN becomes
//     the capability CAP_BPF.
func EventObservations(evs []Event) []Observation {
	var out []Observation
	at := map[[2]string]int{}
	for _, ev := range evs {
		if ev.Decision != DecisionDeny && ev.Decision != DecisionAudit {
			continue
		}
		kind, object, ok := eventObservation(ev)
		if !ok {
			continue
		}
		o := Observation{Kind: kind, Object: object, Count: 1, First: ev.Time, Last: ev.Time, Comm: ev.Comm, Container: ev.Container}
		k := [2]string{kind, object}
		if i, seen := at[k]; seen {
			out[i] = out[i].merge(o)
			continue
		}
		at[k] = len(out)
		out = append(out, o)
	}
	return mergeConnects(out)
}

// mergeConnects folds the connect or send of a destination ("ip ADDR:PORT")
// into the packets it sent there ("tcp ADDR:PORT"), which name the
// protocol: one operation, recorded twice in audit mode.
func mergeConnects(obs []Observation) []Observation {
	byDst := map[string]int{}
	for i, o := range obs {
		if proto, dst, _ := strings.Cut(o.Object, " "); o.Kind == ObserveEgress && proto != "ip" {
			if _, seen := byDst[dst]; !seen {
				byDst[dst] = i
			}
		}
	}
	drop := map[int]bool{}
	for i, o := range obs {
		dst, ok := strings.CutPrefix(o.Object, "ip ")
		if j, seen := byDst[dst]; ok && o.Kind == ObserveEgress && seen {
			m := obs[j].merge(o)
			if m.Comm == "" {
				m.Comm, m.Container = o.Comm, o.Container
			}
			obs[j] = m
			drop[i] = true
		}
	}
	out := obs[:0]
	for i, o := range obs {
		if !drop[i] {
			out = append(out, o)
		}
	}
	return out
}

// outcome is the " (errno text)" the engine appends to a denied kernel
// event's object.
var outcome = regexp.MustCompile(` \([a-z][a-z ,'-]*\)$`)

// fileOps are the operations named in front of a file event's path.
var fileOps = []string{"setattr", "setxattr", "removexattr", "link", "rename", "unix connect", "unix send",
	"set acl", "remove acl", "unlink", "rmdir"}

func eventObservation(ev Event) (kind, object string, ok bool) {
	obj := outcome.ReplaceAllString(ev.Object, "")
	switch ev.Control {
	case "file":
		for _, op := range fileOps {
			if rest, cut := strings.CutPrefix(obj, op+" "); cut {
				obj = rest
				break
			}
		}
		if checkObservedPath(obj) != nil || strings.Contains(obj, "/…/") {
			return "", "", false
		}
		return ObserveWrite, obj, true
	case "exec":
		obj = strings.TrimPrefix(obj, "mmap PROT_EXEC of ")
		if checkObservedPath(obj) != nil {
			return "", "", false
		}
		return ObserveExec, obj, true
	case "egress", "ingress":
		if ev.TargetZone != "" {
			return ObservePeerZone, ev.TargetZone, ValidateName("zone name", ev.TargetZone) == nil
		}
		if ev.Control == "ingress" {
			return "", "", false
		}
		return egressEventObject(obj)
	case "capability":
		if strings.HasPrefix(obj, "bpf(2) ") {
			return ObserveCapability, "CAP_BPF", true
		}
		name, err := CapabilityName(obj)
		return ObserveCapability, name, err == nil
	case "signal", "ptrace":
		target := ev.TargetZone
		if target == "" {
			target = "host"
		} else if ValidateName("zone name", target) != nil {
			return "", "", false
		}
		return ev.Control, target, true
	}
	return "", "", false
}

// egressEventObject reads "ADDR:PORT" (a connect or send) and "packet
// ADDR[:PORT] PROTO[ flags]" (a packet program).
func egressEventObject(obj string) (kind, object string, ok bool) {
	if rest, cut := strings.CutPrefix(obj, "packet "); cut {
		f := strings.Fields(rest)
		if len(f) < 2 {
			return "", "", false
		}
		obj = f[1] + " " + f[0]
	} else {
		if _, err := netip.ParseAddrPort(obj); err != nil {
			return "", "", false
		}
		obj = "ip " + obj
	}
	d, err := ParseEgressObject(obj)
	if err != nil {
		return "", "", false
	}
	return ObserveEgress, d.String(), true
}

// String is the canonical object: "tcp 10.0.0.5:80", "udp [fd00::1]:53",
// "icmp 10.0.0.5".
func (d EgressObject) String() string {
	if d.Port == 0 {
		return d.Proto + " " + d.Addr.String()
	}
	return d.Proto + " " + netip.AddrPortFrom(d.Addr, d.Port).String()
}
