package storage

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Object is a stored object with the facts that queries filter on.
type Object struct {
	Key
	Kind     string
	UID      string
	OwnerUID string
	Labels   map[string]string
	// Fields holds the IndexedFields the object has, for field selectors.
	Fields map[string]string
	// CreatedAt is metadata.creationTimestamp in Unix seconds.
	CreatedAt             int64
	MemberResourceVersion string
	Revision              int64
	// Data is the object's JSON exactly as served.
	Data []byte
}

// MaxFieldValueLen is the longest field value that field selectors can match.
const MaxFieldValueLen = 512

// IndexedFields are the field paths, beyond metadata.name and
// metadata.namespace, that field selectors may use. They are the ones
// kube-apiserver supports for its built-in kinds; any kind that has the
// field can be selected on it.
var IndexedFields = []string{
	"spec.nodeName",
	"spec.restartPolicy",
	"spec.schedulerName",
	"spec.serviceAccountName",
	"spec.hostNetwork",
	"spec.unschedulable",
	"spec.signerName",
	"spec.clusterIP",
	"spec.type",
	"status.phase",
	"status.podIP",
	"status.nominatedNodeName",
	"status.successful",
	"type",
	"reason",
	"reportingComponent",
	"source.component",
	"involvedObject.kind",
	"involvedObject.namespace",
	"involvedObject.name",
	"involvedObject.uid",
	"involvedObject.apiVersion",
	"involvedObject.resourceVersion",
	"involvedObject.fieldPath",
	"source", // of a core/v1 Event, derived: see setEventSource
	"regarding.kind",
	"regarding.namespace",
	"regarding.name",
	"regarding.uid",
	"regarding.apiVersion",
	"regarding.resourceVersion",
	"regarding.fieldPath",
	"reportingController",
}

var indexedFieldPaths = func() map[string][]string {
	m := make(map[string][]string, len(IndexedFields))
	for _, f := range IndexedFields {
		m[f] = splitPath(f)
	}
	return m
}()

// IsSelectableField reports whether field selectors may use field.
func IsSelectableField(field string) bool {
	if field == "metadata.name" || field == "metadata.namespace" {
		return true
	}
	_, ok := indexedFieldPaths[field]
	return ok
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

// Describe extracts the queryable facts of u. Key.Cluster and Key.GVR are
// left for the caller.
func Describe(u *unstructured.Unstructured) Object {
	o := Object{
		Key:                   Key{Namespace: u.GetNamespace(), Name: u.GetName()},
		Kind:                  u.GetKind(),
		UID:                   string(u.GetUID()),
		Labels:                u.GetLabels(),
		MemberResourceVersion: u.GetResourceVersion(),
	}
	if ts := u.GetCreationTimestamp(); !ts.IsZero() {
		o.CreatedAt = ts.Unix()
	}
	refs := u.GetOwnerReferences()
	for i, ref := range refs {
		if i == 0 || (ref.Controller != nil && *ref.Controller) {
			o.OwnerUID = string(ref.UID)
		}
		if ref.Controller != nil && *ref.Controller {
			break
		}
	}
	for field, path := range indexedFieldPaths {
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
		if !found || err != nil {
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			continue
		}
		if s == "" || len(s) > MaxFieldValueLen {
			continue // an empty value selects like an absent one; a huge one is not indexed
		}
		if o.Fields == nil {
			o.Fields = map[string]string{}
		}
		o.Fields[field] = s
	}
	setEventSource(u, &o)
	return o
}

// FieldValue returns the value field selectors compare for field; absent
// fields read as "", as kube-apiserver's field sets do.
func (o *Object) FieldValue(field string) string {
	switch field {
	case "metadata.name":
		return o.Name
	case "metadata.namespace":
		return o.Namespace
	}
	return o.Fields[field]
}

// DecodeStored parses an object as Panorama stores it: its cluster and member
// resourceVersion come from annotations, its revision from resourceVersion.
// Key.GVR is left for the caller.
func DecodeStored(data []byte) (Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return Object{}, err
	}
	o := Describe(u)
	ann := u.GetAnnotations()
	o.Cluster = ann[ClusterAnnotation]
	o.MemberResourceVersion = ann[MemberResourceVersionAnnotation]
	o.Revision, _ = strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	o.Data = data
	return o, nil
}
