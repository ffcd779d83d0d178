package sqlstore

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// Checks of what a write stores in text columns, before any of it reaches the
// database: a member's object is untrusted, and one the database refuses
// would otherwise fail its whole batch, every time it is retried. The JSON of
// an object is stored as bytes, which hold anything.

func validateCluster(cluster string) error {
	if cluster == "" || len(cluster) > maxClusterLen || !storage.StorableText(cluster) {
		return storage.Invalid("cluster", "must be UTF-8 of 1 to %d characters", maxClusterLen)
	}
	return nil
}

func validateTarget(cluster string, gvr schema.GroupVersionResource) error {
	if err := validateCluster(cluster); err != nil {
		return err
	}
	switch {
	case len(gvr.Group) > maxGroupLen, gvr.Version == "" || len(gvr.Version) > maxVersionLen, gvr.Resource == "" || len(gvr.Resource) > maxResourceLen,
		!storage.StorableText(gvr.Group + gvr.Version + gvr.Resource):
		return storage.Invalid("resource", "%v is not a storable resource", gvr)
	}
	return nil
}

// describeChange describes c's object with the built-in fields of its
// resource (what newRow stores, unless fields are declared), and returns
// why storage cannot hold it, if it cannot.
func describeChange(gr schema.GroupResource, c storage.Change) (storage.Object, *storage.InvalidError) {
	if c.Name == "" || len(c.Name) > maxNameLen || len(c.Namespace) > maxNamespaceLen || !storage.StorableText(c.Namespace+c.Name) {
		return storage.Object{}, &storage.InvalidError{Field: "metadata.name", Reason: "not a storable name"}
	}
	if c.Object == nil {
		return storage.Object{}, nil
	}
	d := storage.BuiltinFields.Describe(gr, c.Object)
	return d, validateDescription(c, &d)
}

// validateDescription returns why storage cannot hold the object of c
// that d describes, or nil.
func validateDescription(c storage.Change, d *storage.Object) *storage.InvalidError {
	if d.Namespace != c.Namespace || d.Name != c.Name {
		return &storage.InvalidError{Field: "metadata.name", Reason: "differs from the change's name"}
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"metadata.resourceVersion", d.MemberResourceVersion, maxMemberRVLen},
		{"metadata.uid", d.UID, maxUIDLen},
		{"metadata.ownerReferences", d.OwnerUID, maxUIDLen},
		{"kind", d.Kind, maxKindLen},
	} {
		if len(f.value) > f.max || !storage.StorableText(f.value) {
			return &storage.InvalidError{Field: f.name, Reason: "longer than storage allows, or not UTF-8 without NUL"}
		}
	}
	for k, v := range d.Labels {
		if len(k) > maxAttrKeyLen || len(v) > maxAttrValueLen || !storage.StorableText(k) || !storage.StorableText(v) {
			return &storage.InvalidError{Field: "metadata.labels", Reason: "a label is longer than storage allows, or not UTF-8 without NUL"}
		}
	}
	for k, vs := range d.Fields {
		for _, v := range vs {
			if !storage.StorableText(v) {
				return &storage.InvalidError{Field: k, Reason: "not UTF-8 without NUL"}
			}
		}
	}
	return nil
}

// refusal says why the database refused a write's values, if err is such
// a refusal, which the same rows meet every time they are written: text
// it cannot hold, or a value, row or statement larger than it takes (each
// dialect's refused says which errors are). The write's batch is then
// refused, not retried; describeChange, and the synchronizer's bound on
// objects' size, should catch these first.
func refusal(err error) (reason string, refused bool) {
	for _, d := range dialects {
		if reason := d.refused(err); reason != "" {
			return reason, true
		}
	}
	return "", false
}

// Why the database refused a write's values (refusal).
const (
	refusedText = "the database refused a text value"
	refusedSize = "the database refused a value as too large"
)
