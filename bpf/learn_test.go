package bpf

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

func learnedEntry(t testing.TB, k rauhaLearnKey, v rauhaLearnValue) (key, value []byte) {
	var kb, vb bytes.Buffer
	if err := binary.Write(&kb, binary.NativeEndian, &k); err != nil {
		t.Fatal(err)
	}
	if err := binary.Write(&vb, binary.NativeEndian, &v); err != nil {
		t.Fatal(err)
	}
	return kb.Bytes(), vb.Bytes()
}

func setObject(k *rauhaLearnKey, b []byte) {
	for i, c := range b {
		k.Object[i] = int8(c)
	}
}

func TestDecodeLearned(t *testing.T) {
	clock := bootClock{now: time.Unix(1000, 0), boot: 500}
	v := rauhaLearnValue{Count: 3, FirstNs: 100, LastNs: 400, Cgid: 77}
	for i, c := range "sh" {
		v.Comm[i] = int8(c)
	}
	path := rauhaLearnKey{Zone: 5, Kind: uint16(LearnWrite)}
	setObject(&path, []byte("/var/x"))
	var a4 bytes.Buffer
	_ = binary.Write(&a4, binary.NativeEndian, rauhaLearnAddr{Proto: 6, Family: 2, Port: 8080, Addr: [16]byte{10, 0, 0, 2}})
	egress := rauhaLearnKey{Zone: 5, Kind: uint16(LearnEgress)}
	setObject(&egress, a4.Bytes())
	// A ping or raw socket's packet (egress_skb): no port.
	var icmp6 bytes.Buffer
	_ = binary.Write(&icmp6, binary.NativeEndian, rauhaLearnAddr{Proto: 58, Family: 10, Addr: [16]byte{0xfd, 15: 1}})
	ping := rauhaLearnKey{Zone: 5, Kind: uint16(LearnEgress)}
	setObject(&ping, icmp6.Bytes())
	capability := rauhaLearnKey{Zone: 5, Kind: uint16(LearnCapability)}
	setObject(&capability, []byte{13, 0, 0, 0})
	ptrace := rauhaLearnKey{Zone: 5, Kind: uint16(LearnPtrace)}
	setObject(&ptrace, []byte{0, 0, 0, 0})
	sys := rauhaLearnKey{Zone: 5, Kind: uint16(LearnSyscall)}
	setObject(&sys, []byte{250, 0, 0, 0})

	for _, tc := range []struct {
		key  rauhaLearnKey
		want Learned
	}{
		{path, Learned{Zone: 5, Kind: LearnWrite, Path: "/var/x"}},
		{egress, Learned{Zone: 5, Kind: LearnEgress, Addr: netip.MustParseAddrPort("10.0.0.2:8080"), Proto: 6}},
		{ping, Learned{Zone: 5, Kind: LearnEgress, Addr: netip.MustParseAddrPort("[fd00::1]:0"), Proto: 58}},
		{capability, Learned{Zone: 5, Kind: LearnCapability, Number: 13}},
		{ptrace, Learned{Zone: 5, Kind: LearnPtrace, Number: 0}},
		{sys, Learned{Zone: 5, Kind: LearnSyscall, Number: 250}},
	} {
		kb, vb := learnedEntry(t, tc.key, v)
		got, err := decodeLearned(kb, vb, clock)
		if err != nil {
			t.Fatal(err)
		}
		tc.want.Count, tc.want.CgroupID, tc.want.Comm = 3, 77, "sh"
		tc.want.First, tc.want.Last = time.Unix(1000, 0).Add(-400), time.Unix(1000, 0).Add(-100)
		if got != tc.want {
			t.Errorf("decoded %+v, want %+v", got, tc.want)
		}
	}
	bad := rauhaLearnKey{Zone: 5, Kind: 99}
	kb, vb := learnedEntry(t, bad, v)
	if _, err := decodeLearned(kb, vb, clock); err == nil {
		t.Error("an unknown kind decoded")
	}
	if _, err := decodeLearned(kb[:10], vb, clock); err == nil {
		t.Error("a short key decoded")
	}
	empty := rauhaLearnKey{Zone: 5, Kind: uint16(LearnExec)}
	kb, vb = learnedEntry(t, empty, v)
	if _, err := decodeLearned(kb, vb, clock); err == nil {
		t.Error("an exec without a path decoded")
	}
}

// FuzzDecodeLearned feeds arbitrary map entries to the decoder: it must
// reject or decode them, never panic, and what it decodes must say what
// the bytes said.
func FuzzDecodeLearned(f *testing.F) {
	k := rauhaLearnKey{Zone: 1, Kind: uint16(LearnExec)}
	setObject(&k, []byte("/bin/sh"))
	kb, vb := learnedEntry(f, k, rauhaLearnValue{Count: 1})
	f.Add(kb, vb)
	k = rauhaLearnKey{Zone: 2, Kind: uint16(LearnEgress)}
	setObject(&k, []byte{17, 10, 0, 53})
	kb, vb = learnedEntry(f, k, rauhaLearnValue{Count: 9})
	f.Add(kb, vb)
	f.Add([]byte{}, []byte{})
	clock := newBootClock()
	f.Fuzz(func(t *testing.T, key, value []byte) {
		l, err := decodeLearned(key, value, clock)
		if err != nil {
			return
		}
		if l.Zone != binary.NativeEndian.Uint32(key) || uint16(l.Kind) != binary.NativeEndian.Uint16(key[4:]) {
			t.Fatalf("decoded zone %d kind %d from %x", l.Zone, l.Kind, key[:8])
		}
		if l.Count != binary.NativeEndian.Uint64(value) {
			t.Fatalf("decoded count %d from %x", l.Count, value[:8])
		}
		switch l.Kind {
		case LearnExec, LearnRead, LearnWrite:
			if l.Path == "" || bytes.IndexByte([]byte(l.Path), 0) >= 0 || len(l.Path) > 256 {
				t.Fatalf("decoded path %q", l.Path)
			}
		case LearnEgress:
			if !l.Addr.IsValid() {
				t.Fatalf("decoded egress without an address")
			}
		}
	})
}
