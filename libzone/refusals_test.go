package libzone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rauha-runtime/rauha/zone"
)

// A container naming a zone whose create was refused in this root is
// refused with that reason; without the note, or once it is removed, with
// "create it first".
func TestRefusedZoneNamesTheReason(t *testing.T) {
	e, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	annotations := map[string]string{AnnotationZone: "aud"}
	refusal := func() string {
		t.Helper()
		b := testBundle(t, annotations, false)
		err := e.store.View(func(tx *zone.Tx) error {
			_, err := e.resolveZone(tx, "c1", b.Dir, "aud", true, nil)
			return err
		})
		if err == nil {
			t.Fatal("a container naming a missing zone was admitted")
		}
		return err.Error()
	}
	if got := refusal(); !strings.Contains(got, "zone aud does not exist: create it first") {
		t.Fatalf("without a note: %s", got)
	}
	const why = "this node refused ZonePolicy aud: audit mode cannot be enforced here"
	for _, n := range []struct{ name, reason string }{{"aud", why}, {"other", "x"}} {
		if err := e.NoteRefusal(n.name, n.reason); err != nil {
			t.Fatal(err)
		}
	}
	if got := refusal(); !strings.Contains(got, "zone aud does not exist on this node: "+why) {
		t.Fatalf("with a note: %s", got)
	}
	if err := e.NoteRefusal("aud", ""); err != nil {
		t.Fatal(err)
	}
	if got := refusal(); !strings.Contains(got, "create it first") {
		t.Fatalf("after the note is removed: %s", got)
	}
	if err := e.NoteRefusal("other", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.Root(), refusalsFile)); !os.IsNotExist(err) {
		t.Fatalf("no notes left, the file stays: %v", err)
	}
	if err := e.NoteRefusal("../x", "y"); err == nil {
		t.Fatal("a note for an invalid zone name was taken")
	}
}
