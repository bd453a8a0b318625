package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rauha-runtime/rauha/api/v1alpha1"
	"github.com/rauha-runtime/rauha/libzone"
)

// TestWebhookSelectsZones runs the pod webhook against the real API server
// of the test stage: the server calls it for pods of a namespace made for
// the test, as a MutatingWebhookConfiguration tells it to. The pods are
// never scheduled (no nodeName): only their admission matters here.
func TestWebhookSelectsZones(t *testing.T) {
	_, _, kc := testClient(t) // skips without a cluster; installs the CRD
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	certDir, caPEM := serveCert(t)
	port := freePort(t)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	srv.Register(WebhookPath, &webhook.Admission{Handler: &PodZoner{
		Reader: c, Decoder: admission.NewDecoder(scheme), RuntimeClass: "rauha"}})
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() { cancel(); <-done }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	waitFor(t, "the webhook to serve", func() (bool, error) {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: pool})
		if err != nil {
			return false, nil
		}
		return true, conn.Close()
	})

	sfx := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	ns := "rauha-wh-" + sfx
	sel, def := "wh-sel-"+sfx, "wh-def-"+sfx
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "a"}}})
	// Namespaces are not deleted here: without a controller-manager they
	// would stay Terminating; the stage's etcd goes at teardown.
	fail := admissionregv1.Fail
	none := admissionregv1.SideEffectClassNone
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, WebhookPath)
	mwc := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "rauha-test-" + sfx},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name: "zone.rauha.dev", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig: admissionregv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			// only the test's namespace: other tests' pods never reach it
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create},
				Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}
	mustCreate(t, c, mwc)
	t.Cleanup(func() { _ = c.Delete(context.Background(), mwc) })
	for _, zp := range []*v1alpha1.ZonePolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: sel}, Spec: v1alpha1.ZonePolicySpec{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: def}, Spec: v1alpha1.ZonePolicySpec{Default: true}},
	} {
		mustCreate(t, c, zp)
		t.Cleanup(func() { _ = c.Delete(context.Background(), zp) })
	}

	rauha := "rauha"
	for _, tc := range []struct {
		name, runtimeClass string
		labels, ann        map[string]string
		zone, by           string
	}{
		{name: "labelled", runtimeClass: rauha, labels: map[string]string{"app": "web"}, zone: sel, by: "podSelector of ZonePolicy " + sel},
		{name: "unlabelled", runtimeClass: rauha, zone: def, by: "spec.default of ZonePolicy " + def},
		{name: "explicit", runtimeClass: rauha, labels: map[string]string{"app": "web"}, ann: map[string]string{libzone.AnnotationZone: "mine"}, zone: "mine"},
		{name: "runc", labels: map[string]string{"app": "web"}},
	} {
		pod := testPod(ns, tc.name, tc.runtimeClass, tc.labels, tc.ann)
		mustCreate(t, c, pod)
		if got := pod.Annotations[libzone.AnnotationZone]; got != tc.zone {
			t.Errorf("pod %s: zone %q, want %q", tc.name, got, tc.zone)
		}
		if got := pod.Annotations[SelectedByAnnotation]; got != tc.by {
			t.Errorf("pod %s: selected by %q, want %q", tc.name, got, tc.by)
		}
		_ = c.Delete(ctx, pod)
	}

	// A second default: a pod that needs one is refused, with the reason.
	def2 := &v1alpha1.ZonePolicy{ObjectMeta: metav1.ObjectMeta{Name: def + "-2"}, Spec: v1alpha1.ZonePolicySpec{Default: true}}
	mustCreate(t, c, def2)
	t.Cleanup(func() { _ = c.Delete(context.Background(), def2) })
	err = c.Create(ctx, testPod(ns, "twodefaults", rauha, nil, nil))
	if want := fmt.Sprintf("ZonePolicies %s, %s all set spec.default", def, def2.Name); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a pod with two defaults: %v, want a refusal saying %q", err, want)
	}
}

func testPod(ns, name, runtimeClass string, labels, ann map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	if runtimeClass != "" {
		p.Spec.RuntimeClassName = &runtimeClass
	}
	return p
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serveCert writes a serving certificate for 127.0.0.1, signed by a CA made
// for the test, as tls.crt and tls.key; it returns the directory and the
// CA's PEM.
func serveCert(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, key := newKey(), newKey()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rauha-webhook-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "rauha-webhook"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tls.crt", "CERTIFICATE", leafDER)
	write("tls.key", "EC PRIVATE KEY", keyDER)
	return dir, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}
