package zone

import (
	"fmt"
	"testing"
	"time"
)

func TestRecordObservationsMergesAndBounds(t *testing.T) {
	s := OpenStore(t.TempDir())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := Observation{Kind: ObserveExec, Object: "/bin/ls", Count: 2, First: t0.Add(time.Minute), Last: t0.Add(time.Minute), Comm: "sh", Container: "b"}
	earlier := Observation{Kind: ObserveExec, Object: "/bin/ls", Count: 3, First: t0, Last: t0.Add(2 * time.Minute), Comm: "make", Container: "a"}
	if err := s.Update(func(tx *Tx) error {
		_, err := tx.RecordObservations("z", []Observation{first})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(tx *Tx) error {
		_, err := tx.RecordObservations("z", []Observation{earlier})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []Observation
	if err := s.View(func(tx *Tx) (err error) { got, err = tx.Observations("z"); return }); err != nil {
		t.Fatal(err)
	}
	want := Observation{Kind: ObserveExec, Object: "/bin/ls", Count: 5, First: t0, Last: t0.Add(2 * time.Minute), Comm: "make", Container: "a"}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("merged recording = %+v, want [%+v]", got, want)
	}

	// A full recording drops new objects but still counts repeats.
	var dropped int
	if err := s.Update(func(tx *Tx) error {
		obs := make([]Observation, MaxObservations+5)
		for i := range obs {
			obs[i] = Observation{Kind: ObserveRead, Object: fmt.Sprintf("/f%d", i), Count: 1}
		}
		obs = append(obs, Observation{Kind: ObserveExec, Object: "/bin/ls", Count: 1})
		var err error
		dropped, err = tx.RecordObservations("z", obs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if dropped != 6 {
		t.Errorf("dropped %d new objects, want 6 (one slot was taken by /bin/ls)", dropped)
	}
	if err := s.View(func(tx *Tx) (err error) { got, err = tx.Observations("z"); return }); err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxObservations {
		t.Errorf("recording holds %d objects, want %d", len(got), MaxObservations)
	}
	for _, o := range got {
		if o.Object == "/bin/ls" && o.Count != 6 {
			t.Errorf("/bin/ls count %d after a repeat in a full recording, want 6", o.Count)
		}
	}

	if err := s.Update(func(tx *Tx) error { return tx.DeleteObservations("z") }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(func(tx *Tx) (err error) { got, err = tx.Observations("z"); return }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("%d observations left after DeleteObservations", len(got))
	}
}

func TestSetPolicyLearn(t *testing.T) {
	strict, err := Preset(PresetStrict)
	if err != nil {
		t.Fatal(err)
	}
	strict.Resources.PidsMax = 64
	asked := strict.Clone()
	asked.Zone.Mode = ModeLearn

	var z Zone
	z.SetPolicy(asked)
	if z.Policy.Zone.Mode != ModeLearn || z.Learning == nil || z.Learning.Zone.Mode != ModeEnforce {
		t.Fatalf("learning zone: policy mode %q, learning %+v", z.Policy.Zone.Mode, z.Learning)
	}
	// What the learning zone enforces: no rule its recording covers, the
	// base's resources.
	if z.Policy.Capabilities.Allowed != nil || z.Policy.Network.AllowedEgress != nil ||
		z.Policy.Filesystem.WritablePaths != nil || len(z.Policy.Syscalls.Deny) != 0 || z.Policy.Resources.PidsMax != 64 {
		t.Errorf("learn policy %+v", z.Policy)
	}
	if !z.Learning.Equal(strict) {
		t.Errorf("base %+v, want the strict preset", z.Learning)
	}
	if !z.AskedPolicy().Equal(asked) {
		t.Errorf("asked policy %+v, want %+v", z.AskedPolicy(), asked)
	}

	// Any other mode ends learning.
	z.SetPolicy(strict)
	if z.Learning != nil || !z.Policy.Equal(strict) || !z.AskedPolicy().Equal(strict) {
		t.Errorf("after an enforced policy: %+v, learning %+v", z.Policy, z.Learning)
	}
}
