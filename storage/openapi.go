package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OpenAPIResource is where the controller stores, per cluster, the
// member's OpenAPI v3 documents of the group versions it syncs, for the API
// server to serve under that cluster's view (kubectl explain reads them):
// the API server has no member credentials. It is an internal resource: no
// Cluster's status lists it, so no view serves its objects as data. One
// object, OpenAPIIndexName, indexes the others, one per group version, named
// by its path ("api/v1", "apis/apps/v1"), so that the index of a view reads
// a few small objects, not every document. The controller writes all of a
// cluster's in one Apply, so the index and the documents agree at any
// revision.
var OpenAPIResource = schema.GroupVersionResource{Group: "openapi.panorama.io", Version: "v3", Resource: "documents"}

// OpenAPIIndexName is the name of a cluster's index object; no group
// version's path is a single segment.
const OpenAPIIndexName = "index"

// OpenAPIPath is the path of a group version in an OpenAPI v3 index, as
// kube-apiserver names them ("api/v1", "apis/apps/v1"), and the name of its
// stored document.
func OpenAPIPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// OpenAPIIndex is what a cluster's index object holds.
type OpenAPIIndex struct {
	// MemberVersion is the GitVersion the member claimed when the documents
	// were fetched. It is only a record: the view across clusters merges
	// by majority (apiserver's ballot), since a member claims what it likes.
	MemberVersion string `json:"memberVersion"`
	// GroupVersions maps a group version's path to its stored document.
	GroupVersions map[string]OpenAPIEntry `json:"groupVersions"`
}

// OpenAPIEntry is one stored document in the index.
type OpenAPIEntry struct {
	// Hash identifies the document's content (hex SHA-256 of the bytes the
	// member sent): the API server's ETag and ?hash= of it.
	Hash string `json:"hash"`
	// MemberURL is the member's serverRelativeURL of the document, which
	// carries the member's own hash: the controller fetches it again only
	// when that changes.
	MemberURL string `json:"memberURL"`
}

// OpenAPIDocument is what a document object holds. The document is a
// string of the member's bytes, not a nested object: storing an object
// would decode it into maps, many times its size in memory (and
// kube-apiserver's api/v1 is a large document), and serve it re-encoded.
type OpenAPIDocument struct {
	Hash     string `json:"hash"`
	Document string `json:"document"`
}

// OpenAPIParts are the parts of a document that the all-clusters view
// merges; the controller stores only documents that have them in these
// shapes.
type OpenAPIParts struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]json.RawMessage            `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

// openAPIKinds are the kinds of the stored objects.
const (
	openAPIIndexKind    = "OpenAPIIndex"
	openAPIDocumentKind = "OpenAPIDocument"
)

// OpenAPIIndexObject is the index as an object to Apply. Its
// resourceVersion is a digest of its content, so that an unchanged index is
// not written again (Apply skips an equal member resourceVersion).
func OpenAPIIndexObject(index OpenAPIIndex) (*unstructured.Unstructured, error) {
	return openAPIObject(openAPIIndexKind, OpenAPIIndexName, index)
}

// OpenAPIDocumentObject is a document as an object to Apply, named by its
// group version's path.
func OpenAPIDocumentObject(path string, doc OpenAPIDocument) (*unstructured.Unstructured, error) {
	return openAPIObject(openAPIDocumentKind, path, doc)
}

func openAPIObject(kind, name string, content any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(OpenAPIResource.GroupVersion().String())
	u.SetKind(kind)
	u.SetName(name)
	// Never an integer, which Apply would order as a member's
	// resourceVersion: a digest only tells equal from different.
	u.SetResourceVersion("sha256-" + Digest(data))
	return u, nil
}

// DecodeOpenAPI reads the content of a stored index or document object
// into out (*OpenAPIIndex or *OpenAPIDocument).
func DecodeOpenAPI(data []byte, out any) error {
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding a stored OpenAPI object: %w", err)
	}
	return nil
}

// Digest is the hex SHA-256 of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
