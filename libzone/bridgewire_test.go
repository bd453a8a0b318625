package libzone

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/vishvananda/netns"
)

func TestQuietFormatterDropsOnlyTheHookWarning(t *testing.T) {
	var out bytes.Buffer
	log := logrus.New()
	log.Out = &out
	log.Formatter = QuietFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	log.Warn(funcHookWarning)
	if out.Len() != 0 {
		t.Fatalf("the hook warning was written: %q", out.String())
	}
	log.Error(funcHookWarning) // not the warning libcontainer writes
	log.Warn("cannot serialize hook of type configs.CommandHook, skipping")
	log.Warn("something else")
	for _, want := range []string{"level=error", "configs.CommandHook", "something else"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("dropped a record with %q: %q", want, out.String())
		}
	}
}

func TestNewNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: unshares a network namespace")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	ns, ns2, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	defer ns2.Close()
	after, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(before) {
		t.Fatal("the calling thread was left in another network namespace")
	}
	if !ns.Equal(ns2) {
		t.Fatal("the two handles name different namespaces")
	}
	if ns.Equal(before) {
		t.Fatal("no new namespace: the handles name the caller's")
	}
}
