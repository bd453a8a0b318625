package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// A batch starts small, as most maps read here hold a few entries (or
// none) and every buffer is fresh memory to fault in; it grows while the
// batches come back full. A hash map answers ENOSPC when a bucket holds
// more entries than a batch: the batch then grows too.
const (
	firstBatch = 16
	maxBatch   = 4096
)

// eachHashEntry calls fn with every key and value of a hash map, read with
// BPF_MAP_LOOKUP_BATCH: a few calls for the whole map, where a MapIterator
// makes two per entry (with 500 members, the zone removal of every delete
// spent 1000 bpf calls listing them). Kernels without batch
// operations on hash maps (before 5.6) are read with the iterator.
func eachHashEntry[K, V any](m *ebpf.Map, fn func(*K, *V)) error {
	var cursor ebpf.MapBatchCursor
	keys, vals := make([]K, firstBatch), make([]V, firstBatch)
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := range n {
			fn(&keys[i], &vals[i])
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return nil
		case errors.Is(err, unix.ENOSPC) && n == 0 && len(keys) < maxBatch:
		case errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL):
			if n > 0 {
				return fmt.Errorf("batch lookup failed after %d entries: %w", n, err)
			}
			return eachIterated(m, fn)
		case err != nil:
			return err
		case n < len(keys) || len(keys) >= maxBatch:
			continue
		}
		keys, vals = make([]K, 4*len(keys)), make([]V, 4*len(vals))
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
