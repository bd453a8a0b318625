package agent

import (
	"context"
	"encoding/json"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rauha-runtime/rauha/api/v1alpha1"
	"github.com/rauha-runtime/rauha/libzone"
)

// WebhookPath is where the pod webhook is served.
const WebhookPath = "/mutate-pods"

// SelectedByAnnotation records on a pod which ZonePolicy's selectors, or the
// default, gave it its zone (the runtime does not read it: it is for
// `kubectl get pod -o yaml`).
const SelectedByAnnotation = "rauha.dev/zone-selected-by"

// PodZoner is the mutating admission webhook that gives a pod of the
// runtime class RuntimeClass which names no zone the zone Select chooses,
// by setting the annotation org.rauha.zone: the runtime never sees a pod's
// labels or its namespace's, only the annotations containerd passes on.
type PodZoner struct {
	// Reader reads Namespaces and ZonePolicies. It should read the API
	// server, not a cache: a ZonePolicy created just before the pod must
	// count, or the pod would run in a looser zone than the one chosen.
	Reader       client.Reader
	Decoder      admission.Decoder
	RuntimeClass string
}

// Handle implements admission.Handler.
func (h *PodZoner) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only pod creation chooses a zone")
	}
	var pod corev1.Pod
	if err := h.Decoder.Decode(req, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if rc := pod.Spec.RuntimeClassName; rc == nil || *rc != h.RuntimeClass {
		return admission.Allowed("not of runtime class " + h.RuntimeClass)
	}
	if pod.Annotations[libzone.AnnotationZone] != "" {
		return admission.Allowed("the pod names its zone")
	}
	var ns corev1.Namespace
	if err := h.Reader.Get(ctx, client.ObjectKey{Name: req.Namespace}, &ns); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	var zps v1alpha1.ZonePolicyList
	if err := h.Reader.List(ctx, &zps); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	sel, err := Select(pod.Labels, ns.Labels, zps.Items)
	if err != nil {
		return admission.Denied("rauha zone selection: " + err.Error())
	}
	if sel.Zone == "" {
		return admission.Allowed("no ZonePolicy selects the pod and none is the default")
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[libzone.AnnotationZone] = sel.Zone
	pod.Annotations[SelectedByAnnotation] = sel.By
	raw, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}
