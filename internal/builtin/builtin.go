// Package builtin knows Kubernetes' own API: the groups and kinds
// kube-apiserver serves itself, as client-go's scheme has them, apart from
// what members add (CRDs, aggregated APIs). A member claims its discovery
// (an aggregated API, or an agent, answers anything), and clients of the
// views resolve names by group (kubectl takes the first group discovery
// lists that serves a name): what a member says is Kubernetes' own must be.
package builtin

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/panorama-io/panorama/storage"
)

// scheme is a copy of client-go's (every group of k8s.io/api) that no
// registration elsewhere in the binary extends.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	return s
}()

// Group reports whether group is Kubernetes' own: the core group, or one
// of kube-apiserver's (CRDs' too, which k8s.io/api has no type of).
func Group(group string) bool {
	return group == "" || group == storage.CRDResource.Group || scheme.IsGroupRegistered(group)
}

// Resource reports whether resource, of kind gvk, is one of Kubernetes'
// own: a kind of its group and version, and named as kube-apiserver names
// that kind's resource.
func Resource(gvk schema.GroupVersionKind, resource string) bool {
	if gvk.Group == storage.CRDResource.Group {
		return gvk == storage.CRDResource.GroupVersion().WithKind("CustomResourceDefinition") && resource == storage.CRDResource.Resource
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return scheme.Recognizes(gvk) && plural.Resource == resource
}
