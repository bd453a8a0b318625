package v1alpha1

import (
	"fmt"
	"reflect"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rauha-runtime/rauha/zone"
)

// CRD is the CustomResourceDefinition of ZonePolicy, with its OpenAPI
// schema generated from the Go types (deploy/crd.yaml is its YAML; a test
// keeps the two equal).
func CRD() *apiextv1.CustomResourceDefinition {
	status := Schema(reflect.TypeFor[ZonePolicyStatus]())
	// Each node applies its own entry: a map keyed by node name lets
	// server-side apply give every agent ownership of exactly one entry.
	nodes := status.Properties["nodes"]
	listType := "map"
	nodes.XListType = &listType
	nodes.XListMapKeys = []string{"node"}
	nodes.Items.Schema.Required = []string{"node"}
	status.Properties["nodes"] = nodes

	spec := Schema(reflect.TypeFor[ZonePolicySpec]())
	spec.Required = []string{"policy"}
	root := apiextv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"spec"},
		Properties: map[string]apiextv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       spec,
			"status":     status,
		},
	}
	return &apiextv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: Resource + "." + Group},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: Group,
			Scope: apiextv1.ClusterScoped,
			Names: apiextv1.CustomResourceDefinitionNames{
				Plural: Resource, Singular: "zonepolicy", Kind: Kind, ListKind: Kind + "List",
				ShortNames: []string{"zp"},
			},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: Version, Served: true, Storage: true,
				Schema:       &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &root},
				Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextv1.CustomResourceColumnDefinition{
					{Name: "Mode", Type: "string", JSONPath: ".spec.policy.zone.mode"},
					{Name: "Default", Type: "boolean", JSONPath: ".spec.default", Description: "the zone of rauha pods that name none and match no selector"},
					{Name: "Nodes", Type: "integer", JSONPath: ".status.nodes[*].node", Description: "nodes that reported"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			}},
		},
	}
}

var (
	byteSizeType = reflect.TypeFor[zone.ByteSize]()
	timeType     = reflect.TypeFor[metav1.Time]()
)

// Schema is the structural OpenAPI v3 schema of t as encoding/json writes
// it: field names from the json tags, pointers as their element, a
// zone.ByteSize as an integer or a size string, metav1.Time as a date-time
// string, a map with string keys as an object of its values. It panics on a kind it does not know: a new field type must be
// described here before it can reach the API.
func Schema(t reflect.Type) apiextv1.JSONSchemaProps {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case byteSizeType:
		return apiextv1.JSONSchemaProps{XIntOrString: true,
			Description: `bytes, or a size with a binary unit such as "512M"`}
	case timeType:
		return apiextv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	}
	switch t.Kind() {
	case reflect.String:
		return apiextv1.JSONSchemaProps{Type: "string"}
	case reflect.Bool:
		return apiextv1.JSONSchemaProps{Type: "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
		return apiextv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	case reflect.Slice:
		item := Schema(t.Elem())
		return apiextv1.JSONSchemaProps{Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &item}}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		item := Schema(t.Elem())
		return apiextv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &item}}
	case reflect.Struct:
		s := apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{}}
		for f := range t.Fields() {
			name, inline := jsonName(f)
			switch {
			case !f.IsExported() || name == "-":
			case inline:
				for k, v := range Schema(f.Type).Properties {
					s.Properties[k] = v
				}
			default:
				s.Properties[name] = Schema(f.Type)
			}
		}
		return s
	}
	panic(fmt.Sprintf("v1alpha1.Schema: no schema for %s (kind %s)", t, t.Kind()))
}

// jsonName is the name encoding/json gives field f, and whether f is
// embedded without a name (its fields are the parent's).
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name, f.Anonymous
	}
	return name, false
}
