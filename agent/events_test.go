package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rauha-runtime/rauha/libzone"
	"github.com/rauha-runtime/rauha/zone"
)

// coreClient is a client of the real API server for core objects.
func coreClient(t *testing.T) client.Client {
	t.Helper()
	kc := os.Getenv("RAUHA_TEST_KUBECONFIG")
	if kc == "" {
		t.Skip("RAUHA_TEST_KUBECONFIG is not set: run through `make test-k8s`, which starts a kube-apiserver")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runForwarder runs a forwarder of e until the returned stop is called.
func runForwarder(t *testing.T, c client.Client, e *libzone.Engine, annotations map[string]map[string]string) (stop func()) {
	t.Helper()
	f := &EventForwarder{Client: c, Reader: c, Node: "test-node", Engine: e, Interval: 200 * time.Millisecond,
		Annotations: func(id string) (map[string]string, error) { return annotations[id], nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("event forwarder: %v", err)
		}
	}
}

// podEvents are the Events of pod in namespace default, by reason.
func podEvents(c client.Client, pod string) (map[string]corev1.Event, error) {
	var l corev1.EventList
	if err := c.List(context.Background(), &l, client.InNamespace("default"),
		client.MatchingFields{"involvedObject.name": pod}); err != nil {
		return nil, err
	}
	out := map[string]corev1.Event{}
	for _, ev := range l.Items {
		if _, dup := out[ev.Reason]; dup {
			return nil, fmt.Errorf("two Events of reason %s", ev.Reason)
		}
		out[ev.Reason] = ev
	}
	return out, nil
}

// TestAgentEventsOnPods: a root's deny events become Events on the pods
// their containers belong to, one per pod and control with the number of
// denials as its count; history from before the agent's first start is not
// sent; a container that is no pod's is skipped; a restarted forwarder goes
// on from its cursor, adding only what is new.
func TestAgentEventsOnPods(t *testing.T) {
	c := coreClient(t)
	ctx := context.Background()
	root := t.TempDir()
	e, err := libzone.New(libzone.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	pod := fmt.Sprintf("events-test-%d", time.Now().UnixNano()%1_000_000)
	annotations := map[string]map[string]string{
		"c-app": {annoSandboxName: pod, annoSandboxNamespace: "default", annoSandboxUID: "uid-" + pod, annoContainerName: "app"},
		"c-own": {"org.rauha.zone": "web"}, // a container no pod owns
	}
	t.Cleanup(func() {
		_ = c.DeleteAllOf(ctx, &corev1.Event{}, client.InNamespace("default"),
			client.MatchingFields{"involvedObject.name": pod})
	})
	log := zone.NewEventLog(root)
	deny := func(container, control, object string, at time.Time) zone.Event {
		return zone.Event{Time: at, Container: container, Pid: 42, Comm: "wget", Control: control,
			Decision: zone.DecisionDeny, Object: object, Backend: "landlock"}
	}
	// History: logged before the agent ever ran on the root.
	if err := log.Append("web", deny("c-app", "exec", "/bin/old", time.Now())); err != nil {
		t.Fatal(err)
	}

	stop := runForwarder(t, c, e, annotations)
	// The first start of a root's forwarder writes its cursor (now).
	waitFor(t, "the forwarder's cursor", func() (bool, error) {
		_, err := os.Stat(filepath.Join(root, CursorFile))
		return err == nil, err
	})
	t0 := time.Now()
	var evs []zone.Event
	for i := range 300 {
		evs = append(evs, deny("c-app", "egress", "10.0.0.1:80 (operation not permitted)", t0.Add(time.Duration(i+1)*time.Microsecond)))
	}
	evs = append(evs, deny("c-app", "file", "/etc/probe (read-only file system)", t0.Add(time.Millisecond)))
	evs = append(evs, deny("c-own", "egress", "10.0.0.1:81", t0.Add(time.Millisecond)))
	// The flood comes in several batches, as drains append it.
	for len(evs) > 0 {
		n := min(len(evs), 64)
		if err := log.Append("web", evs[:n]...); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	waitFor(t, "one Event per control with the number of denials", func() (bool, error) {
		got, err := podEvents(c, pod)
		if err != nil {
			return false, err
		}
		return len(got) == 2 && got["DeniedEgress"].Count == 300 && got["DeniedFile"].Count == 1, nil
	})
	got, _ := podEvents(c, pod)
	eg := got["DeniedEgress"]
	if eg.Type != corev1.EventTypeWarning || eg.InvolvedObject.Kind != "Pod" || string(eg.InvolvedObject.UID) != "uid-"+pod ||
		eg.InvolvedObject.FieldPath != "spec.containers{app}" || eg.Source.Host != "test-node" {
		t.Errorf("Event: %+v", eg)
	}
	if want := "zone web egress denied: 10.0.0.1:80 (operation not permitted) (process wget, pid 42, container app)"; eg.Message != want {
		t.Errorf("message %q, want %q", eg.Message, want)
	}
	if !strings.Contains(got["DeniedFile"].Message, "/etc/probe") {
		t.Errorf("file Event message: %q", got["DeniedFile"].Message)
	}
	if _, sent := got["DeniedExec"]; sent {
		t.Error("an event from before the agent's first start was sent")
	}

	// Stopped, then restarted: only what came meanwhile is added.
	stop()
	t1 := time.Now()
	for i := range 7 {
		if err := log.Append("web", deny("c-app", "egress", "10.0.0.1:443", t1.Add(time.Duration(i)*time.Microsecond))); err != nil {
			t.Fatal(err)
		}
	}
	stop = runForwarder(t, c, e, annotations)
	defer stop()
	waitFor(t, "the denials of the stop added to the Event", func() (bool, error) {
		got, err := podEvents(c, pod)
		return err == nil && got["DeniedEgress"].Count >= 307, err
	})
	// A marker after the rest: once it is counted, a resent flood would be
	// too (one flush writes every pending Event).
	if err := log.Append("web", deny("c-app", "file", "/etc/marker", time.Now())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the marker", func() (bool, error) {
		got, err := podEvents(c, pod)
		return err == nil && got["DeniedFile"].Count == 2, err
	})
	got, _ = podEvents(c, pod)
	if n := got["DeniedEgress"].Count; n != 307 {
		t.Errorf("after the restart the egress Event counts %d denials, want 307 (300 + 7)", n)
	}
	if !strings.Contains(got["DeniedEgress"].Message, "10.0.0.1:443") {
		t.Errorf("message after the restart: %q", got["DeniedEgress"].Message)
	}
}

// TestEventNaming: reasons name the control and the decision, and Event
// names stay valid object names for any pod name.
func TestEventNaming(t *testing.T) {
	for _, tc := range []struct{ control, decision, typ, reason string }{
		{"egress", zone.DecisionDeny, corev1.EventTypeWarning, "DeniedEgress"},
		{"file", zone.DecisionAudit, corev1.EventTypeNormal, "AuditedFile"},
		{"exec_route", zone.DecisionDeny, corev1.EventTypeWarning, "DeniedExecRoute"},
	} {
		typ, reason := eventReason(eventKey{Control: tc.control, Decision: tc.decision})
		if typ != tc.typ || reason != tc.reason {
			t.Errorf("%s/%s: %s %s, want %s %s", tc.control, tc.decision, typ, reason, tc.typ, tc.reason)
		}
	}
	long := strings.Repeat("p", 253)
	for _, pod := range []string{"web", long} {
		k := eventKey{Namespace: "default", Pod: pod, UID: "u", Control: "egress", Decision: zone.DecisionDeny}
		name := eventName(k, "node-a")
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("Event name %q: %v", name, errs)
		}
		if name == eventName(k, "node-b") {
			t.Error("two nodes' Events of one pod share a name")
		}
		k.Control = "file"
		if name == eventName(k, "node-a") {
			t.Error("two controls' Events of one pod share a name")
		}
	}
}
