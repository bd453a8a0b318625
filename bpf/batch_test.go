package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
)

// eachHashEntry sees every entry of a hash map larger than one batch, and
// reads a map type without batch lookups (an LPM trie) through the
// iterator.
func TestEachHashEntry(t *testing.T) {
	requireRoot(t)
	hash, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 4, MaxEntries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer hash.Close()
	const n = 3*maxBatch/4 + 17 // several batches, growing
	for i := range uint64(n) {
		if err := hash.Put(i+1000, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint64]uint32{}
	if err := eachHashEntry(hash, func(k *uint64, v *uint32) { seen[*k] = *v }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("saw %d entries, want %d", len(seen), n)
	}
	for k, v := range seen {
		if uint64(v)+1000 != k {
			t.Fatalf("entry %d = %d, want %d", k, v, k-1000)
		}
	}

	trie, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 16, Flags: 1 /* BPF_F_NO_PREALLOC */})
	if err != nil {
		t.Fatal(err)
	}
	defer trie.Close()
	for i := range uint32(3) {
		if err := trie.Put([2]uint32{32, i}, i); err != nil {
			t.Fatal(err)
		}
	}
	count := 0
	if err := eachHashEntry(trie, func(*[2]uint32, *uint32) { count++ }); err != nil {
		t.Fatal(err)
	}
	if count != 3 {
		t.Fatalf("saw %d trie entries, want 3", count)
	}
}
