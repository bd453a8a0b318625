package libzone

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSpareNameKeptInLockFile(t *testing.T) {
	e := &Engine{root: t.TempDir()}
	if got := e.keptSpare(); got != spareName(e.root) {
		t.Fatalf("no name kept: got %q, want the older fixed name %q", got, spareName(e.root))
	}
	lock, err := e.lockSpare()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSpare(lock, "rzabcd12345678"); err != nil {
		t.Fatal(err)
	}
	if got := readSpare(lock); got != "rzabcd12345678" {
		t.Fatalf("readSpare = %q", got)
	}
	// A shorter name replaces a longer one whole.
	if err := writeSpare(lock, "rzab"); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	if got := e.keptSpare(); got != "rzab" {
		t.Fatalf("keptSpare = %q, want rzab", got)
	}
	lock, err = e.lockSpare()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := writeSpare(lock, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "spare-bridge.lock")); err != nil || len(b) != 0 {
		t.Fatalf("cleared lock file holds %q (%v)", b, err)
	}
}
