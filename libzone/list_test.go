package libzone

import (
	"sync/atomic"
	"testing"
)

// eachParallel calls fn exactly once for every index, on one goroutine for
// short lists and on several for long ones.
func TestEachParallel(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 1000} {
		calls := make([]atomic.Int32, n)
		eachParallel(n, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: fn(%d) called %d times", n, i, c)
			}
		}
	}
}
