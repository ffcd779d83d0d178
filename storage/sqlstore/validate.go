package sqlstore

import (
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
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
// it cannot hold (PostgreSQL's invalid byte sequence 22021 or unsupported
// Unicode escape 22P05, MySQL's incorrect string value 1366), or a value,
// row or statement larger than it takes (PostgreSQL's
// program_limit_exceeded 54000; MySQL's packet too large, 1153 and 1301,
// or 1105 when a parameter sent apart is, its row too large, 1118, or a
// packet larger than the driver sends; SQLite's SQLITE_TOOBIG). The
// write's batch is then refused, not retried; describeChange, and the
// synchronizer's bound on objects' size, should catch these first.
func refusal(err error) (reason string, refused bool) {
	const text, size = "the database refused a text value", "the database refused a value as too large"
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "22021", "22P05":
			return text, true
		case "54000":
			return size, true
		}
		return "", false
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		switch {
		case my.Number == 1366:
			return text, true
		case my.Number == 1153, my.Number == 1301, my.Number == 1118,
			my.Number == 1105 && strings.Contains(my.Message, "max_allowed_packet"): // MariaDB's, of a long parameter
			return size, true
		}
		return "", false
	}
	var lite interface{ Code() int } // modernc.org/sqlite's *Error
	if errors.Is(err, mysql.ErrPktTooLarge) || errors.As(err, &lite) && lite.Code()&0xff == sqliteTooBig {
		return size, true
	}
	return "", false
}

// sqliteTooBig is SQLITE_TOOBIG, the primary result code of a string or
// blob larger than SQLite takes.
const sqliteTooBig = 18
