package agent

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rauha-runtime/rauha/api/v1alpha1"
)

// Selection is the zone a pod that names none is given, and why.
type Selection struct {
	// Zone is the ZonePolicy's name, or "" when none applies.
	Zone string
	// By says which selectors or the default chose it, for the pod's
	// annotation rauha.dev/zone-selected-by.
	By string
}

// Select chooses the ZonePolicy of a pod that names no zone, from the pod's
// labels and those of its namespace:
//
//  1. the ZonePolicies whose selectors all match (a policy with neither
//     namespaceSelector nor podSelector is joined only by annotation, and a
//     policy being deleted is not chosen);
//  2. among them the most specific: both selectors before podSelector only
//     before namespaceSelector only; then the first name in byte order, so
//     every webhook replica chooses the same whatever order it lists them in;
//  3. when none matches, the ZonePolicy with spec.default, if there is one.
//
// A selector that does not parse, or more than one default, is an error:
// the pod is refused rather than given a zone nobody chose.
func Select(podLabels, nsLabels map[string]string, policies []v1alpha1.ZonePolicy) (Selection, error) {
	type match struct {
		name string
		rank int
		by   string
	}
	var matches []match
	var defaults []string
	for i := range policies {
		zp := &policies[i]
		if zp.DeletionTimestamp != nil {
			continue
		}
		if zp.Spec.Default {
			defaults = append(defaults, zp.Name)
		}
		ns, pod := zp.Spec.NamespaceSelector, zp.Spec.PodSelector
		if ns == nil && pod == nil {
			continue
		}
		okNS, err := selects(ns, nsLabels)
		if err != nil {
			return Selection{}, fmt.Errorf("ZonePolicy %s: namespaceSelector: %w", zp.Name, err)
		}
		okPod, err := selects(pod, podLabels)
		if err != nil {
			return Selection{}, fmt.Errorf("ZonePolicy %s: podSelector: %w", zp.Name, err)
		}
		if !okNS || !okPod {
			continue
		}
		m := match{name: zp.Name}
		switch {
		case ns != nil && pod != nil:
			m.rank, m.by = 3, "namespaceSelector and podSelector"
		case pod != nil:
			m.rank, m.by = 2, "podSelector"
		default:
			m.rank, m.by = 1, "namespaceSelector"
		}
		matches = append(matches, m)
	}
	if len(matches) > 0 {
		sort.Slice(matches, func(i, j int) bool {
			if matches[i].rank != matches[j].rank {
				return matches[i].rank > matches[j].rank
			}
			return matches[i].name < matches[j].name
		})
		m := matches[0]
		return Selection{Zone: m.name, By: fmt.Sprintf("%s of ZonePolicy %s", m.by, m.name)}, nil
	}
	switch len(defaults) {
	case 0:
		return Selection{}, nil
	case 1:
		return Selection{Zone: defaults[0], By: "spec.default of ZonePolicy " + defaults[0]}, nil
	}
	sort.Strings(defaults)
	return Selection{}, fmt.Errorf("ZonePolicies %s all set spec.default; at most one may (unset it on all but one)", strings.Join(defaults, ", "))
}

// selects reports whether sel matches set; a nil selector does not restrict.
func selects(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(set)), nil
}
