package libzone

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rauha-runtime/rauha/zone"
)

// testBundle is a bundle whose rootfs is an empty directory, with the given
// annotations; hostNet drops its network namespace.
func testBundle(t *testing.T, annotations map[string]string, hostNet bool) *Bundle {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := specconv.Example()
	spec.Root.Path = filepath.Join(dir, "rootfs")
	spec.Annotations = annotations
	spec.Linux.CgroupsPath = "/rauha-admit-test/" + filepath.Base(dir)
	if hostNet {
		spec.Linux.Namespaces = slices.DeleteFunc(spec.Linux.Namespaces, func(ns specs.LinuxNamespace) bool {
			return ns.Type == specs.NetworkNamespace
		})
	}
	return &Bundle{Dir: dir, Spec: spec}
}

// writePolicy writes a policy file the annotation org.rauha.policy can name
// (world-readable, as LoadAnnotationPolicy requires).
func writePolicy(t *testing.T, toml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(p, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rootEntries lists what is in an engine's state root.
func rootEntries(t *testing.T, e *Engine) []string {
	t.Helper()
	entries, err := os.ReadDir(e.root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, d := range entries {
		names = append(names, d.Name())
	}
	return names
}

// A container refused by strict admission for a zone that would come with
// it writes nothing: no database, no record, no zone, no event file, no
// state directory (and no kernel state: admission never opens the
// enforcer).
func TestRefusedCreateWritesNothing(t *testing.T) {
	e, err := New(Options{Root: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	pol := writePolicy(t, "[zone]\nadmission = \"strict\"\n[network]\nmode = \"isolated\"\n")
	b := testBundle(t, map[string]string{AnnotationZone: "needy", AnnotationPolicy: pol}, true)
	err = e.Create("needy", b, CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "zone needy (admission strict) refuses container needy: network.mode=isolated") {
		t.Fatalf("create: %v, want a strict refusal naming network.mode", err)
	}
	if left := rootEntries(t, e); len(left) > 0 {
		t.Fatalf("the refused create left %v in the state root", left)
	}
}

// A container refused by a zone that exists leaves no record, and the
// refusal is an admission event in the zone's log.
func TestRefusedCreateIsAnEventOfItsZone(t *testing.T) {
	e, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := zone.ParsePolicy("iso.toml", []byte("[zone]\nadmission = \"strict\"\n[network]\nmode = \"isolated\"\n"), SyscallChecker())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Update(func(tx *zone.Tx) error {
		return tx.PutZone(&zone.Zone{Name: "iso", Policy: *p, PolicySource: "file:/iso.toml"})
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	err = e.Create("hostnet", testBundle(t, map[string]string{AnnotationZone: "iso"}, true), CreateOptions{})
	const reason = "network.mode=isolated needs a network namespace, but the container shares the host's"
	if err == nil || !strings.Contains(err.Error(), "zone iso (admission strict) refuses container hostnet: "+reason) {
		t.Fatalf("create: %v, want a strict refusal", err)
	}
	pol := writePolicy(t, "[zone]\nadmission = \"audit\"\n")
	err = e.Create("other", testBundle(t, map[string]string{AnnotationZone: "iso", AnnotationPolicy: pol}, false), CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "zone iso already exists with policy file:/iso.toml") {
		t.Fatalf("create with another policy: %v, want a refusal", err)
	}

	if err := e.store.View(func(tx *zone.Tx) error {
		if cs, err := tx.Containers(); err != nil || len(cs) > 0 {
			t.Errorf("records after refused creates: %v %v", cs, err)
		}
		zs, err := tx.Zones()
		if err != nil || len(zs) != 1 {
			t.Errorf("zones after refused creates: %v %v", zs, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"hostnet", "other"} {
		if _, err := os.Stat(e.stateDir(id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state directory of %s: %v", id, err)
		}
	}

	evs, err := zone.NewEventLog(e.root).Read("iso", start)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ container, object string }{
		{"hostnet", reason},
		{"other", "annotation org.rauha.policy=" + pol + " asks for another policy than the zone's file:/iso.toml"},
	}
	if len(evs) != len(want) {
		t.Fatalf("events of zone iso: %+v, want %d", evs, len(want))
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Zone != "iso" || ev.Container != w.container || ev.Control != ControlAdmission ||
			ev.Decision != zone.DecisionDeny || ev.Object != w.object || ev.Pid != os.Getpid() || ev.Comm != "rauha" {
			t.Errorf("event %d: %+v, want container %s, object %q", i, ev, w.container, w.object)
		}
	}
}
