package libzone

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// What the kernel recorded becomes observations named by the store: the
// zone and the member by id, other zones by name ("host" for none), an
// egress destination with its protocol.
func TestLearnedObservations(t *testing.T) {
	created := time.Unix(1000, 0)
	now := created.Add(time.Minute)
	names := &eventNames{
		zones:   zoneIDs{3: &zone.Zone{Name: "web", Created: created}, 5: &zone.Zone{Name: "db", Created: created}},
		members: map[uint64]string{77: "c1"},
	}
	for _, tc := range []struct {
		l    bpf.Learned
		want zone.Observation
	}{
		{bpf.Learned{Kind: bpf.LearnExec, Path: "/bin/sh"}, zone.Observation{Kind: zone.ObserveExec, Object: "/bin/sh"}},
		{bpf.Learned{Kind: bpf.LearnWrite, Path: "/var/x"}, zone.Observation{Kind: zone.ObserveWrite, Object: "/var/x"}},
		{bpf.Learned{Kind: bpf.LearnEgress, Proto: 6, Addr: netip.MustParseAddrPort("10.0.0.2:80")},
			zone.Observation{Kind: zone.ObserveEgress, Object: "tcp 10.0.0.2:80"}},
		{bpf.Learned{Kind: bpf.LearnEgress, Proto: 17, Addr: netip.MustParseAddrPort("[fd00::1]:53")},
			zone.Observation{Kind: zone.ObserveEgress, Object: "udp [fd00::1]:53"}},
		// ICMP and raw sockets' packets: no port, and the form that
		// ParseEgressObject and allowed_egress read.
		{bpf.Learned{Kind: bpf.LearnEgress, Proto: 1, Addr: netip.MustParseAddrPort("10.0.0.2:0")},
			zone.Observation{Kind: zone.ObserveEgress, Object: "icmp 10.0.0.2"}},
		{bpf.Learned{Kind: bpf.LearnEgress, Proto: 58, Addr: netip.MustParseAddrPort("[fd00::1]:0")},
			zone.Observation{Kind: zone.ObserveEgress, Object: "icmpv6 fd00::1"}},
		{bpf.Learned{Kind: bpf.LearnEgress, Proto: 47, Addr: netip.MustParseAddrPort("10.0.0.3:0")},
			zone.Observation{Kind: zone.ObserveEgress, Object: "proto 47 10.0.0.3"}},
		{bpf.Learned{Kind: bpf.LearnCapability, Number: 0}, zone.Observation{Kind: zone.ObserveCapability, Object: "CAP_CHOWN"}},
		{bpf.Learned{Kind: bpf.LearnPeerZone, Number: 5}, zone.Observation{Kind: zone.ObservePeerZone, Object: "db"}},
		{bpf.Learned{Kind: bpf.LearnSignal, Number: 0}, zone.Observation{Kind: zone.ObserveSignal, Object: "host"}},
		{bpf.Learned{Kind: bpf.LearnPtrace, Number: 9}, zone.Observation{Kind: zone.ObservePtrace, Object: "zone-9"}},
		{bpf.Learned{Kind: bpf.LearnCapability, Number: 10}, zone.Observation{Kind: zone.ObserveCapability, Object: "CAP_NET_BIND_SERVICE"}},
	} {
		tc.l.Zone, tc.l.CgroupID, tc.l.Count, tc.l.First, tc.l.Last, tc.l.Comm = 3, 77, 2, now, now, "sh"
		name, got := names.observation(learnedObservation(tc.l))
		if got.Kind == zone.ObserveEgress {
			if _, err := zone.ParseEgressObject(got.Object); err != nil {
				t.Errorf("egress object %q does not parse: %v", got.Object, err)
			}
		}
		tc.want.Count, tc.want.First, tc.want.Last, tc.want.Comm, tc.want.Container = 2, now.UTC(), now.UTC(), "sh", "c1"
		if name != "web" || got != tc.want {
			t.Errorf("%+v: zone %q, %+v; want web, %+v", tc.l, name, got, tc.want)
		}
	}
}
