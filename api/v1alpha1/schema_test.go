package v1alpha1

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/rauha-runtime/rauha/zone"
)

// TestCRDManifestIsGenerated keeps deploy/crd.yaml equal to what the Go
// types generate: regenerate it with `make crd`.
func TestCRDManifestIsGenerated(t *testing.T) {
	want, err := yaml.Marshal(CRD())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../deploy/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("deploy/crd.yaml differs from the schema the Go types generate; run `make crd`")
	}
}

// TestSchemaCoversEveryPolicyKey fills every field of a policy and checks
// that each key of its JSON has a schema of the right type: a field added
// to zone.Policy without a schema would be pruned by the API server.
func TestSchemaCoversEveryPolicyKey(t *testing.T) {
	p := &zone.Policy{}
	fill(reflect.ValueOf(p).Elem())
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	s := Schema(reflect.TypeFor[zone.Policy]())
	var keys []string
	walk(t, "policy", doc, s, &keys)
	sort.Strings(keys)
	// Spot-check that the walk reached the leaves, not only the tables.
	for _, k := range []string{"policy.network.allowed_egress", "policy.resources.memory_limit", "policy.zone.admission"} {
		if i := sort.SearchStrings(keys, k); i == len(keys) || keys[i] != k {
			t.Errorf("key %s not checked (checked: %s)", k, strings.Join(keys, " "))
		}
	}
}

// TestSchemaCoversEverySpecKey does the same for the whole spec: the
// selectors (metav1.LabelSelector, with its map of labels) and default.
func TestSchemaCoversEverySpecKey(t *testing.T) {
	spec := &ZonePolicySpec{}
	fill(reflect.ValueOf(spec).Elem())
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	walk(t, "spec", doc, Schema(reflect.TypeFor[ZonePolicySpec]()), &keys)
	sort.Strings(keys)
	for _, k := range []string{"spec.default", "spec.namespaceSelector.matchLabels.x", "spec.podSelector.matchExpressions[].values[]"} {
		if i := sort.SearchStrings(keys, k); i == len(keys) || keys[i] != k {
			t.Errorf("key %s not checked (checked: %s)", k, strings.Join(keys, " "))
		}
	}
}

// fill sets every settable field of v to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key)
		fill(val)
		v.SetMapIndex(key, val)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	}
}

func walk(t *testing.T, path string, v any, s apiextv1.JSONSchemaProps, keys *[]string) {
	t.Helper()
	*keys = append(*keys, path)
	switch v := v.(type) {
	case map[string]any:
		if s.Type != "object" {
			t.Errorf("%s: JSON object, schema type %q", path, s.Type)
		}
		for k, sub := range v {
			ss, ok := s.Properties[k]
			if !ok && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				ss, ok = *s.AdditionalProperties.Schema, true
			}
			if !ok {
				t.Errorf("%s.%s: no schema", path, k)
				continue
			}
			walk(t, path+"."+k, sub, ss, keys)
		}
	case []any:
		if s.Type != "array" || s.Items == nil || s.Items.Schema == nil {
			t.Errorf("%s: JSON array, schema type %q", path, s.Type)
			return
		}
		for _, sub := range v {
			walk(t, path+"[]", sub, *s.Items.Schema, keys)
		}
	case string:
		if s.Type != "string" && !s.XIntOrString {
			t.Errorf("%s: JSON string, schema type %q", path, s.Type)
		}
	case float64:
		if s.Type != "integer" && !s.XIntOrString {
			t.Errorf("%s: JSON number, schema type %q", path, s.Type)
		}
	case bool:
		if s.Type != "boolean" {
			t.Errorf("%s: JSON boolean, schema type %q", path, s.Type)
		}
	}
}
