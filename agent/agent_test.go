package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rauha-runtime/rauha/api/v1alpha1"
	"github.com/rauha-runtime/rauha/libzone"
	"github.com/rauha-runtime/rauha/zone"
)

// The agent is tested against a real API server: the test stage of
// tests/k8s starts one and names its kubeconfig in RAUHA_TEST_KUBECONFIG.
func testClient(t *testing.T) (client.Client, *runtime.Scheme, string) {
	t.Helper()
	kc := os.Getenv("RAUHA_TEST_KUBECONFIG")
	if kc == "" {
		t.Skip("RAUHA_TEST_KUBECONFIG is not set: run through `make test-k8s`, which starts a kube-apiserver")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the agent installs the kernel programs of a test root")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, apiextv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	installCRD(t, c)
	return c, scheme, kc
}

func installCRD(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	crd := v1alpha1.CRD()
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("install the ZonePolicy CRD: %v", err)
	}
	waitFor(t, "the CRD to be established", func() (bool, error) {
		var got apiextv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
				// Established comes before the API server's discovery
				// serves the kind: wait until the client can map it.
				_, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.Kind}, v1alpha1.GroupVersion.Version)
				return err == nil, err
			}
		}
		return false, nil
	})
}

// startAgent runs the agent for one root until the returned stop is called.
func startAgent(t *testing.T, kc string, scheme *runtime.Scheme, e *libzone.Engine) (stop func()) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	// A second agent in this process (the restart) registers the
	// controller's name again.
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Node: "test-node", Engines: []*libzone.Engine{e}, Resync: time.Second}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
}

func nodeStatus(c client.Client, name string) (*v1alpha1.NodeStatus, error) {
	var zp v1alpha1.ZonePolicy
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &zp); err != nil {
		return nil, err
	}
	for _, n := range zp.Status.Nodes {
		if n.Node == "test-node" {
			return &n, nil
		}
	}
	return nil, errors.New("no status entry for test-node")
}

// TestAgentFollowsZonePolicies: a ZonePolicy becomes a zone of the node's
// root with the same policy, an edit changes it, the node reports its
// status, and a deletion — also one made while the agent was stopped —
// removes the zone.
func TestAgentFollowsZonePolicies(t *testing.T) {
	c, scheme, kc := testClient(t)
	ctx := context.Background()
	e, err := libzone.New(libzone.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("agent-test-%d", time.Now().UnixNano()%1_000_000)
	egress := []string{"127.0.0.1/32:80"}
	zp := &v1alpha1.ZonePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	zp.Spec.Policy.Network.AllowedEgress = &egress
	zp.Spec.Policy.Zone.Admission = zone.AdmissionAudit
	if err := c.Create(ctx, zp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(ctx, &v1alpha1.ZonePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}})
		// The root's last zone: its programs, pins and anchor cgroup go too.
		if err := e.DeleteZone(name, true); err != nil && !errors.Is(err, zone.ErrNotFound) {
			t.Errorf("remove the test zone: %v", err)
		}
	})

	stop := startAgent(t, kc, scheme, e)
	waitFor(t, "the zone in the node's root", func() (bool, error) {
		info, err := e.Zone(name)
		if err != nil {
			return false, err
		}
		got := info.Policy.Network.AllowedEgress
		return got != nil && len(*got) == 1 && (*got)[0] == egress[0] && info.PolicySource == SourcePrefix+name, nil
	})
	waitFor(t, "the node's status entry", func() (bool, error) {
		st, err := nodeStatus(c, name)
		if err != nil {
			return false, err
		}
		return st.ObservedGeneration == 1 && st.Backend != "" && st.Error == "", nil
	})

	// An edit reaches the node's zone.
	if err := c.Get(ctx, client.ObjectKey{Name: name}, zp); err != nil {
		t.Fatal(err)
	}
	none := []string{}
	zp.Spec.Policy.Network.AllowedEgress = &none
	if err := c.Update(ctx, zp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the edit in the node's root", func() (bool, error) {
		info, err := e.Zone(name)
		if err != nil {
			return false, err
		}
		got := info.Policy.Network.AllowedEgress
		return got != nil && len(*got) == 0, nil
	})
	waitFor(t, "status of generation 2", func() (bool, error) {
		st, err := nodeStatus(c, name)
		return err == nil && st.ObservedGeneration == 2, err
	})

	// A policy the node refuses keeps the old one and says why.
	if err := c.Get(ctx, client.ObjectKey{Name: name}, zp); err != nil {
		t.Fatal(err)
	}
	zp.Spec.Policy.Filesystem.Deny = []string{"relative/path"}
	if err := c.Update(ctx, zp); err == nil {
		// The API server accepts any string; the node refuses it.
		waitFor(t, "the node's refusal in its status", func() (bool, error) {
			st, err := nodeStatus(c, name)
			return err == nil && st.Error != "" && !st.Isolated, err
		})
		info, err := e.Zone(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Policy.Filesystem.Deny) != 0 {
			t.Errorf("the node applied a policy it should have refused: deny %v", info.Policy.Filesystem.Deny)
		}
	}

	// Deleted while the agent is stopped: the next start forgets the zone.
	stop()
	if err := c.Delete(ctx, zp); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Zone(name); err != nil {
		t.Fatalf("the zone went while no agent ran: %v", err)
	}
	stop = startAgent(t, kc, scheme, e)
	defer stop()
	waitFor(t, "the zone to be removed", func() (bool, error) {
		_, err := e.Zone(name)
		return errors.Is(err, zone.ErrNotFound), nil
	})
}
