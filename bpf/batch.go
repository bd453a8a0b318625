package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// batchSize is how many entries one BPF_MAP_LOOKUP_BATCH call returns at
// most. A hash map answers ENOSPC when a bucket holds more entries than
// that; eachHashEntry then retries with a batch twice as large.
const batchSize = 256

// eachHashEntry calls fn with every key and value of a hash map, read with
// BPF_MAP_LOOKUP_BATCH: a few calls for the whole map, where a MapIterator
// makes two per entry (with 500 members, the zone removal of every delete
// spent 1000 bpf calls, about 9 ms, listing them). Kernels without batch
// operations on hash maps (before 5.6) are read with the iterator.
func eachHashEntry[K, V any](m *ebpf.Map, fn func(*K, *V)) error {
	var cursor ebpf.MapBatchCursor
	keys, vals := make([]K, batchSize), make([]V, batchSize)
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := range n {
			fn(&keys[i], &vals[i])
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return nil
		case errors.Is(err, unix.ENOSPC) && n == 0:
			keys, vals = make([]K, 2*len(keys)), make([]V, 2*len(vals))
		case errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL):
			if n > 0 {
				return fmt.Errorf("batch lookup failed after %d entries: %w", n, err)
			}
			return eachIterated(m, fn)
		case err != nil:
			return err
		}
	}
}

func eachIterated[K, V any](m *ebpf.Map, fn func(*K, *V)) error {
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		fn(&k, &v)
	}
	return it.Err()
}
