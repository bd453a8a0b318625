// Package v1alpha1 is the rauha.dev/v1alpha1 Kubernetes API: the ZonePolicy
// custom resource, which carries a zone's policy to every node of a cluster.
//
// The policy body is zone.Policy itself, so the keys of a ZonePolicy are the
// keys of a policy file and the CRD's OpenAPI schema is generated from the
// same Go type (Schema): the two cannot drift.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rauha-runtime/rauha/zone"
)

// Names of the API.
const (
	Group    = "rauha.dev"
	Version  = "v1alpha1"
	Kind     = "ZonePolicy"
	Resource = "zonepolicies"
)

// GroupVersion is rauha.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AddToScheme registers ZonePolicy and ZonePolicyList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ZonePolicy{}, &ZonePolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// ZonePolicy is one zone of the cluster: its name is the zone's name on
// every node (pods join it with the pod annotation org.rauha.zone), its spec
// the zone's policy. It is cluster-scoped, since a zone's members may come
// from any namespace.
type ZonePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ZonePolicySpec   `json:"spec"`
	Status ZonePolicyStatus `json:"status,omitempty"`
}

// ZonePolicySpec is what the cluster asks of every node, and which pods
// join the zone.
type ZonePolicySpec struct {
	// Policy is the zone's policy, with the keys of a rauha policy file
	// (docs/policy.md). Absent keys take the same defaults as in a file:
	// mode enforce, admission strict.
	Policy zone.Policy `json:"policy"`

	// NamespaceSelector and PodSelector choose the pods of RuntimeClass
	// rauha that join the zone without naming one: the admission webhook
	// (rauha-agent webhook) gives a pod that has no org.rauha.zone
	// annotation the zone of the ZonePolicy whose selectors all match it
	// (see Select for the order when several do). A selector that is not
	// set does not restrict; a ZonePolicy with neither set is joined only
	// by annotation. An empty selector ({}) matches everything.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	PodSelector       *metav1.LabelSelector `json:"podSelector,omitempty"`

	// Default makes this the zone of rauha pods that name no zone and
	// that no ZonePolicy's selectors match. At most one ZonePolicy of the
	// cluster may set it: with two, the webhook refuses such pods rather
	// than guess.
	Default bool `json:"default,omitempty"`
}

// ZonePolicyStatus is what each node reports. Every node's agent owns its
// own entry (server-side apply, keyed by node), so nodes never overwrite
// each other's.
type ZonePolicyStatus struct {
	Nodes []NodeStatus `json:"nodes,omitempty"`
}

// NodeStatus is one node's view of a zone.
type NodeStatus struct {
	// Node is the node's name.
	Node string `json:"node"`
	// ObservedGeneration is the ZonePolicy generation the node enforces.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Backend is the node's enforcement backend (bpf-lsm or landlock).
	Backend string `json:"backend,omitempty"`
	// Members is how many containers of the node are in the zone.
	Members int `json:"members"`
	// Isolated is zone verify's verdict on the node.
	Isolated bool `json:"isolated"`
	// Failed lists the verify checks that did not pass.
	Failed []string `json:"failed,omitempty"`
	// Error says why the node could not apply the policy, if it could not
	// (for example a control the node's kernel cannot enforce under strict
	// admission); the node then keeps enforcing what it had.
	Error string `json:"error,omitempty"`
	// LastUpdate is when the node wrote this entry.
	LastUpdate metav1.Time `json:"lastUpdate"`
}

// ZonePolicyList is a list of ZonePolicy.
type ZonePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ZonePolicy `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (z *ZonePolicy) DeepCopyObject() runtime.Object { return z.DeepCopy() }

// DeepCopy returns a copy of z sharing nothing with it.
func (z *ZonePolicy) DeepCopy() *ZonePolicy {
	if z == nil {
		return nil
	}
	out := &ZonePolicy{TypeMeta: z.TypeMeta, Spec: ZonePolicySpec{
		Policy:            *z.Spec.Policy.Clone(),
		NamespaceSelector: z.Spec.NamespaceSelector.DeepCopy(),
		PodSelector:       z.Spec.PodSelector.DeepCopy(),
		Default:           z.Spec.Default,
	}}
	z.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if z.Status.Nodes != nil {
		out.Status.Nodes = make([]NodeStatus, len(z.Status.Nodes))
		for i, n := range z.Status.Nodes {
			n.Failed = append([]string(nil), n.Failed...)
			n.LastUpdate = *n.LastUpdate.DeepCopy()
			out.Status.Nodes[i] = n
		}
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *ZonePolicyList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &ZonePolicyList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]ZonePolicy, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}
