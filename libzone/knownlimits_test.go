package libzone

import (
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/rauha-runtime/rauha/zone"
)

func TestKnownLimits(t *testing.T) {
	list := func(s ...string) *[]string { return &s }
	shared := &configs.Config{} // no private pid namespace: shares one
	private := &configs.Config{Namespaces: configs.Namespaces{{Type: configs.NEWPID}}}
	for _, tc := range []struct {
		name string
		p    zone.Policy
		cfg  *configs.Config
		lsm  bool
		want []string
	}{
		{"no rules", zone.Policy{}, private, false, nil},
		{"no rules, bpf-lsm", zone.Policy{}, shared, true, nil},
		{"exec rules, fallback", zone.Policy{Exec: zone.Exec{Allow: []string{"/bin"}}}, private, false,
			[]string{limitExecInMemory, limitUpdateDomain, limitUpdateExecAllow}},
		{"exec rules, bpf-lsm", zone.Policy{Exec: zone.Exec{Allow: []string{"/bin"}}}, private, true,
			[]string{limitExecInMemory, limitUpdateExecAllow}},
		{"exec deny list, fallback: held by mounts", zone.Policy{Exec: zone.Exec{Deny: []string{"/bin/x"}}}, private, false,
			[]string{limitExecInMemory, limitUpdateDomain}},
		{"exec deny list, bpf-lsm: changes at once", zone.Policy{Exec: zone.Exec{Deny: []string{"/bin/x"}}}, private, true,
			[]string{limitExecInMemory}},
		{"writable paths and exec.allow, bpf-lsm", zone.Policy{Filesystem: zone.Filesystem{WritablePaths: list("/tmp")}, Exec: zone.Exec{Allow: []string{"/bin"}}}, private, true,
			[]string{limitExecInMemory, limitUpdateAllow, limitUpdateExecAllow}},
		{"deny list only, bpf-lsm: changes at once", zone.Policy{Filesystem: zone.Filesystem{Deny: []string{"/secret"}}}, private, true, nil},
		{"deny list, fallback", zone.Policy{Filesystem: zone.Filesystem{Deny: []string{"/secret"}}}, private, false,
			[]string{limitUpdateDomain}},
		{"capabilities: the capable hook reads the current list", zone.Policy{Capabilities: zone.Capabilities{Allowed: list()}}, private, true, nil},
		{"capabilities, fallback", zone.Policy{Capabilities: zone.Capabilities{Allowed: list()}}, private, false,
			[]string{limitUpdateAtStart}},
		{"syscalls", zone.Policy{Syscalls: zone.Syscalls{Deny: []string{"keyctl"}}}, private, true,
			[]string{limitUpdateAtStart}},
		{"signal grants, fallback, shared pid namespace", zone.Policy{Signals: zone.Signals{AllowedZones: []string{"b"}}}, shared, false,
			[]string{limitSignalGrant, limitSigioEvent}},
		{"signal grants, bpf-lsm", zone.Policy{Signals: zone.Signals{AllowedZones: []string{"b"}}}, shared, true, nil},
	} {
		var r zone.IsolationReport
		zoneLimits(&tc.p, tc.lsm, &r)
		memberLimits(&tc.p, tc.cfg, tc.lsm, &r)
		if !slices.Equal(r.Limits, tc.want) {
			t.Errorf("%s: limits\n%q\nwant\n%q", tc.name, r.Limits, tc.want)
		}
	}
}
