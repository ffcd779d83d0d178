package storage

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is a stored object with the facts that queries filter on.
type Object struct {
	Key
	Kind     string
	UID      string
	OwnerUID string
	Labels   map[string]string
	// Fields holds the values of the indexed fields the object has, for
	// field selectors: sorted, without empty ones.
	Fields map[string][]string
	// Keywords are the words keyword search finds the object by
	// (KeywordsOf): sorted, once each.
	Keywords []string
	// CreatedAt is metadata.creationTimestamp in Unix seconds.
	CreatedAt             int64
	MemberResourceVersion string
	Revision              int64
	// Data is the object's JSON exactly as served.
	Data []byte
}

// IndexedFields are the single-valued field paths, beyond metadata.name
// and metadata.namespace, that field selectors may use. They are the ones
// kube-apiserver supports for its built-in kinds; any kind that has the
// field can be selected on it. BuiltinFields adds multi-valued ones; a
// change here bumps BuiltinFieldsRevision, so that stores reindex.
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
	EventSourceField, // of a core/v1 Event, derived: see eventSource
	"regarding.kind",
	"regarding.namespace",
	"regarding.name",
	"regarding.uid",
	"regarding.apiVersion",
	"regarding.resourceVersion",
	"regarding.fieldPath",
	"reportingController",
}

// Describe extracts the queryable facts of u, an object of resource gr,
// with the fields of fs. Key.Cluster and Key.GVR are left for the caller.
func (fs *FieldSet) Describe(gr schema.GroupResource, u *unstructured.Unstructured) Object {
	o := Object{
		Key:                   Key{Namespace: u.GetNamespace(), Name: u.GetName()},
		Kind:                  u.GetKind(),
		UID:                   string(u.GetUID()),
		Labels:                u.GetLabels(),
		MemberResourceVersion: u.GetResourceVersion(),
		Fields:                fs.Extract(gr, u.Object),
	}
	o.Keywords = KeywordsOf(u, o.Fields)
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
	return o
}

// Describe is BuiltinFields.Describe of an object of any resource.
func Describe(u *unstructured.Unstructured) Object {
	return BuiltinFields.Describe(schema.GroupResource{}, u)
}

// HasFieldValue reports whether field has value, as field selectors
// compare: metadata.name and metadata.namespace are the key's; an indexed
// field has it among its values; "" is an absent field, as in
// kube-apiserver's field sets.
func (o *Object) HasFieldValue(field, value string) bool {
	switch field {
	case "metadata.name":
		return o.Name == value
	case "metadata.namespace":
		return o.Namespace == value
	}
	vs := o.Fields[field]
	if value == "" {
		return len(vs) == 0
	}
	return slices.Contains(vs, value)
}

// HasFieldContaining reports whether a value of field contains any of subs.
func (o *Object) HasFieldContaining(field string, subs []string) bool {
	for _, v := range o.Fields[field] {
		for _, sub := range subs {
			if strings.Contains(v, sub) {
				return true
			}
		}
	}
	return false
}

// DecodeStored parses an object as Panorama stores it: its cluster and member
// resourceVersion come from annotations, its revision from resourceVersion.
// Key.GVR is left for the caller.
func DecodeStored(data []byte) (Object, error) {
	return BuiltinFields.DecodeStored(schema.GroupResource{}, data)
}

// DecodeStored is DecodeStored of an object of resource gr, with the fields of fs.
func (fs *FieldSet) DecodeStored(gr schema.GroupResource, data []byte) (Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return Object{}, err
	}
	o := fs.Describe(gr, u)
	ann := u.GetAnnotations()
	o.Cluster = ann[ClusterAnnotation]
	o.MemberResourceVersion = ann[MemberResourceVersionAnnotation]
	o.Revision, _ = strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	o.Data = data
	return o, nil
}
