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
)

// scheme is a copy of client-go's (every group of k8s.io/api) that no
// registration elsewhere in the binary extends.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	return s
}()

// crds is the resource kube-apiserver serves CRDs as, without a type in
// k8s.io/api.
var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Group reports whether group is Kubernetes' own: the core group, or one
// of kube-apiserver's.
func Group(group string) bool {
	return group == "" || group == crds.Group || scheme.IsGroupRegistered(group)
}

// Resource reports whether resource, of kind gvk, is one of Kubernetes'
// own: a kind of its group and version, and named as kube-apiserver names
// that kind's resource.
func Resource(gvk schema.GroupVersionKind, resource string) bool {
	if gvk.Group == crds.Group {
		return gvk.GroupVersion() == crds.GroupVersion() && gvk.Kind == "CustomResourceDefinition" && resource == crds.Resource
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return scheme.Recognizes(gvk) && plural.Resource == resource
}
