package bpf

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
)

// verifierBudget is the share of the verifier's limit of one million
// processed instructions a program may use on any kernel of the VM lane.
// Verifiers differ from release to release in how much they prune, so a
// program close to the limit on one kernel is refused on another ("program
// too large"): staying well below it on every kernel leaves room for that.
const verifierBudget = 500_000

// Every program of the object loads with the instruction count the
// verifier processed logged, and none uses more than verifierBudget.
func TestVerifierBudget(t *testing.T) {
	requireRoot(t)
	if lsm, err := Probe(); err != nil {
		t.Fatal(err)
	} else if !lsm {
		if os.Getenv("RAUHA_EXPECT_LSM") == "1" {
			t.Fatal("BPF-LSM unusable but RAUHA_EXPECT_LSM=1")
		}
		t.Skip("BPF-LSM programs are refused on this kernel; run bpf/vmtest.sh")
	}
	spec, err := loadRauha()
	if err != nil {
		t.Fatal(err)
	}
	delete(spec.Maps, ".bss")
	clear(spec.Variables)
	for _, m := range spec.Maps {
		m.Pinning = ebpf.PinNone
	}
	if err := fallbackHooks(spec); err != nil {
		t.Fatal(err)
	}
	// Both backends' programs, except those the kernel lacks a hook for.
	ps, err := supported(hookPrograms)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.name)
	}
	slices.Sort(names)
	processed := regexp.MustCompile(`processed (\d+) insns`)
	stack := regexp.MustCompile(`stack depth [0-9+]+`)
	// One program at a time, so that one refused does not hide the counts
	// of the others.
	for _, name := range names {
		one := spec.Copy()
		for other := range one.Programs {
			if other != name {
				delete(one.Programs, other)
			}
		}
		coll, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{
			Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats},
		})
		if err != nil {
			var verr *ebpf.VerifierError
			if errors.As(err, &verr) {
				t.Errorf("%s: refused: %v; the log ends: %q", name, err, verr.Log[max(0, len(verr.Log)-4):])
			} else {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		log := coll.Programs[name].VerifierLog
		coll.Close()
		m := processed.FindStringSubmatch(log)
		if m == nil {
			t.Errorf("%s: no instruction count in the verifier log %q", name, log)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		t.Logf("%-32s %7d instructions processed, %s", name, n, stack.FindString(log))
		if n > verifierBudget {
			t.Errorf("%s: the verifier processed %d instructions, over the budget of %d", name, n, verifierBudget)
		}
	}
}
