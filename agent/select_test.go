package agent

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rauha-runtime/rauha/api/v1alpha1"
)

func zp(name string, ns, pod *metav1.LabelSelector, def bool) v1alpha1.ZonePolicy {
	return v1alpha1.ZonePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ZonePolicySpec{NamespaceSelector: ns, PodSelector: pod, Default: def}}
}

func labelsSel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func TestSelect(t *testing.T) {
	deleting := zp("adeleting", nil, labelsSel("app", "web"), false)
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		pod, ns  map[string]string
		policies []v1alpha1.ZonePolicy
		zone, by string
		err      string
	}{
		{name: "nothing", pod: map[string]string{"app": "web"}},
		{name: "no selectors: annotation only", pod: map[string]string{"app": "web"},
			policies: []v1alpha1.ZonePolicy{zp("web", nil, nil, false)}},
		{name: "pod label", pod: map[string]string{"app": "web"},
			policies: []v1alpha1.ZonePolicy{zp("db", nil, labelsSel("app", "db"), false), zp("web", nil, labelsSel("app", "web"), false)},
			zone:     "web", by: "podSelector of ZonePolicy web"},
		{name: "namespace label", pod: map[string]string{}, ns: map[string]string{"team": "a"},
			policies: []v1alpha1.ZonePolicy{zp("teama", labelsSel("team", "a"), nil, false)},
			zone:     "teama", by: "namespaceSelector of ZonePolicy teama"},
		{name: "both selectors must match", pod: map[string]string{"app": "web"}, ns: map[string]string{"team": "b"},
			policies: []v1alpha1.ZonePolicy{zp("aweb", labelsSel("team", "a"), labelsSel("app", "web"), false)}},
		{name: "both selectors beat pod only beat namespace only", pod: map[string]string{"app": "web"}, ns: map[string]string{"team": "a"},
			policies: []v1alpha1.ZonePolicy{zp("a", labelsSel("team", "a"), nil, false), zp("b", nil, labelsSel("app", "web"), false),
				zp("c", labelsSel("team", "a"), labelsSel("app", "web"), false)},
			zone: "c", by: "namespaceSelector and podSelector of ZonePolicy c"},
		{name: "pod only beats namespace only", pod: map[string]string{"app": "web"}, ns: map[string]string{"team": "a"},
			policies: []v1alpha1.ZonePolicy{zp("a", labelsSel("team", "a"), nil, false), zp("b", nil, labelsSel("app", "web"), false)},
			zone:     "b", by: "podSelector of ZonePolicy b"},
		{name: "equal rank: first name", pod: map[string]string{"app": "web", "tier": "1"},
			policies: []v1alpha1.ZonePolicy{zp("zz", nil, labelsSel("tier", "1"), false), zp("aa", nil, labelsSel("app", "web"), false)},
			zone:     "aa", by: "podSelector of ZonePolicy aa"},
		{name: "a policy being deleted is not chosen", pod: map[string]string{"app": "web"},
			policies: []v1alpha1.ZonePolicy{deleting, zp("web", nil, labelsSel("app", "web"), false)},
			zone:     "web", by: "podSelector of ZonePolicy web"},
		{name: "empty selector matches everything", pod: map[string]string{},
			policies: []v1alpha1.ZonePolicy{zp("all", nil, &metav1.LabelSelector{}, false)},
			zone:     "all", by: "podSelector of ZonePolicy all"},
		{name: "match expressions", pod: map[string]string{"app": "api"},
			policies: []v1alpha1.ZonePolicy{zp("notweb", nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}}, false)},
			zone: "notweb", by: "podSelector of ZonePolicy notweb"},
		{name: "default when nothing matches", pod: map[string]string{"app": "other"},
			policies: []v1alpha1.ZonePolicy{zp("web", nil, labelsSel("app", "web"), false), zp("base", nil, nil, true)},
			zone:     "base", by: "spec.default of ZonePolicy base"},
		{name: "a selector match beats the default", pod: map[string]string{"app": "web"},
			policies: []v1alpha1.ZonePolicy{zp("base", nil, nil, true), zp("web", nil, labelsSel("app", "web"), false)},
			zone:     "web", by: "podSelector of ZonePolicy web"},
		{name: "a default with selectors is also chosen by them", pod: map[string]string{"app": "web"},
			policies: []v1alpha1.ZonePolicy{zp("base", nil, labelsSel("app", "web"), true)},
			zone:     "base", by: "podSelector of ZonePolicy base"},
		{name: "two defaults refuse", pod: map[string]string{},
			policies: []v1alpha1.ZonePolicy{zp("d2", nil, nil, true), zp("d1", nil, nil, true)},
			err:      "ZonePolicies d1, d2 all set spec.default"},
		{name: "two defaults do not matter when a selector matches", pod: map[string]string{"app": "web"},
			policies: []v1alpha1.ZonePolicy{zp("d2", nil, nil, true), zp("d1", nil, nil, true), zp("web", nil, labelsSel("app", "web"), false)},
			zone:     "web", by: "podSelector of ZonePolicy web"},
		{name: "a bad selector refuses", pod: map[string]string{},
			policies: []v1alpha1.ZonePolicy{zp("bad", nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Near"}}}, false)},
			err: "ZonePolicy bad: podSelector: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.pod, tc.ns, tc.policies)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Zone != tc.zone || got.By != tc.by {
				t.Fatalf("got %+v, want zone %q by %q", got, tc.zone, tc.by)
			}
		})
	}
}
