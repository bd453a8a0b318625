package libzone

import (
	"os"
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

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 10000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	for _, data := range [][]byte{nil, []byte("x"), big[:4096], big} {
		path := dir + "/f"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(path)
		if err != nil || string(got) != string(data) {
			t.Fatalf("readFile of %d bytes = %d bytes, %v", len(data), len(got), err)
		}
	}
	if _, err := readFile(dir + "/missing"); err == nil || err.Error() != "open "+dir+"/missing: no such file or directory" {
		t.Fatalf("readFile of a missing file: %v", err)
	}
}
