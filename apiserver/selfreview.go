package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/panorama-io/panorama/internal/responsewriters"
	"github.com/panorama-io/panorama/storage"
)

// Under every view, SelfSubjectAccessReview and SelfSubjectRulesReview
// answer what the user may do through Panorama there, by Panorama's own
// authorization model (authz.go), so that `kubectl auth can-i` and k9s's
// permission checks tell the truth about the view rather than about the
// host: reads (get, list, watch) as the host's RBAC grants them in the
// view's cluster, anything else never.
//
// Across clusters a read is allowed when it is in at least one cluster,
// since Panorama then answers it over the clusters the user may read (with
// a warning that it left out the others) and refuses it only when there is
// none: "yes" means the read succeeds. The reason names the clusters
// allowed (or says every cluster), never one the user may not read.

// selfReviewResources are the review types every view serves, also in its
// discovery.
var selfReviewResources = []storage.Resource{
	{GVR: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"), Kind: "SelfSubjectAccessReview"},
	{GVR: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews"), Kind: "SelfSubjectRulesReview"},
}

// maxReviewBytes bounds a review's body; real ones are a few hundred bytes.
const maxReviewBytes = 1 << 20

var reviewCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	utilruntime.Must(authorizationv1.AddToScheme(s))
	return serializer.NewCodecFactory(s)
}()

// selfReview is the review type info's member-style path names, if any.
func selfReview(info *apirequest.RequestInfo) (storage.Resource, bool) {
	if !info.IsResourceRequest || info.Subresource != "" || info.Name != "" || info.Namespace != "" {
		return storage.Resource{}, false
	}
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	i := slices.IndexFunc(selfReviewResources, func(res storage.Resource) bool { return res.GVR == gvr })
	if i < 0 {
		return storage.Resource{}, false
	}
	return selfReviewResources[i], true
}

// selfReviewInfo is the request info the generic server's filters get for
// a self review under a view: that of the same request to kube-apiserver,
// so the host authorizes it as it authorizes its own self reviews (RBAC's
// system:basic-user grants them to every authenticated user).
func selfReviewInfo(r *http.Request, inner *apirequest.RequestInfo) (*apirequest.RequestInfo, bool) {
	if _, ok := selfReview(inner); !ok {
		return nil, false
	}
	info := *inner
	info.Path = r.URL.Path
	return &info, true
}

// verbsOf are the verbs discovery lists for a resource of a view.
func verbsOf(res storage.Resource) metav1.Verbs {
	if slices.Contains(selfReviewResources, res) {
		return metav1.Verbs{"create"}
	}
	return servedVerbs
}

// isReview reports whether req is of a self review type.
func isReview(req *request) bool {
	if !strings.HasPrefix(req.rest, "/apis/"+authorizationv1.GroupName+"/") || req.info == nil {
		return false
	}
	_, ok := selfReview(req.info)
	return ok
}

// serveReview answers a self review under a view; other methods on its
// path are 405, as in kube.
func (h *Handler) serveReview(w http.ResponseWriter, req *request) {
	res, _ := selfReview(req.info)
	gr := res.GVR.GroupResource()
	if req.r.Method != http.MethodPost {
		writeError(w, req.r, apierrors.NewMethodNotSupported(gr, req.info.Verb), gr)
		return
	}
	if req.cluster != "" && !h.seesCluster(req.r, req.cluster) {
		writeError(w, req.r, clusterNotFound(req.cluster), schema.GroupResource{})
		return
	}
	obj, err := decodeReview(req.r, res)
	if err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	switch review := obj.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		review.Status = h.accessReview(req, review.Spec)
	case *authorizationv1.SelfSubjectRulesReview:
		c, ns := req.view.rulesScope(review.Spec.Namespace)
		review.Status = h.rulesReview(req.r, c, ns)
	}
	responsewriters.WriteJSON(w, http.StatusCreated, obj)
}

// decodeReview reads a review of res's kind (JSON, YAML or protobuf, the
// kind from the path when the body has none). A bad one is a 4xx error,
// as kube-apiserver answers it.
func decodeReview(r *http.Request, res storage.Resource) (runtime.Object, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	switch {
	case err != nil:
		return nil, apierrors.NewBadRequest("reading the body: " + err.Error())
	case len(body) > maxReviewBytes:
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxReviewBytes))
	}
	gvk := res.GVR.GroupVersion().WithKind(res.Kind)
	obj, got, err := reviewCodecs.UniversalDeserializer().Decode(body, &gvk, nil)
	if err == nil && *got != gvk {
		err = fmt.Errorf("got %s, want %s", got.Kind, gvk.Kind)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a %s: %v", gvk.Kind, err))
	}
	if review, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok &&
		(review.Spec.ResourceAttributes == nil) == (review.Spec.NonResourceAttributes == nil) {
		return nil, apierrors.NewInvalid(gvk.GroupKind(), "", field.ErrorList{field.Invalid(field.NewPath("spec"), review.Spec,
			"exactly one of nonResourceAttributes or resourceAttributes must be specified")})
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// accessReview decides one self access review in the view of req.
func (h *Handler) accessReview(req *request, spec authorizationv1.SelfSubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
	if na := spec.NonResourceAttributes; na != nil {
		if na.Verb == "get" && (isDiscovery(na.Path) || na.Path == "/version") {
			return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "discovery and /version are open to who sees the view"}
		}
		return authorizationv1.SubjectAccessReviewStatus{Reason: "a view serves only get of discovery and /version as non-resource paths"}
	}
	a := spec.ResourceAttributes
	cluster, a, ok := req.view.reviewed(a)
	switch {
	case !ok:
		return authorizationv1.SubjectAccessReviewStatus{Reason: fmt.Sprintf("the flat view names namespaces <cluster>.<namespace>, and %q is none", a.Namespace)}
	case !slices.Contains(servedVerbs, a.Verb):
		return authorizationv1.SubjectAccessReviewStatus{Denied: true,
			Reason: fmt.Sprintf("Panorama serves member objects read-only (get, list, watch): %s is never allowed through it", a.Verb)}
	case a.Subresource != "":
		return authorizationv1.SubjectAccessReviewStatus{Reason: fmt.Sprintf("Panorama serves no subresource of member objects, %s neither", a.Subresource)}
	}
	resource, namespace := h.reviewedResource(cluster, a)
	where := "in any namespace"
	var namespaces []string
	if namespace != "" {
		where, namespaces = "in namespace "+namespace, []string{namespace}
	}
	var clusters []string
	if cluster != "" {
		clusters = []string{cluster}
	}
	d, err := h.decide(req.r.Context(), a.Verb, resource, clusters, namespaces)
	st := authorizationv1.SubjectAccessReviewStatus{}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	granted := fmt.Sprintf("the host's RBAC allows %s %s (search.panorama.io) %s", a.Verb, resource, where)
	if cluster == "" && d.acrossClusters(namespace) {
		st.Allowed, st.Reason = true, granted+" of every cluster"
		return st
	}
	allowed := slices.DeleteFunc(h.viewClusters(cluster), func(c string) bool { return !d.allow(c, namespace) })
	switch {
	case len(allowed) == 0:
		st.Reason = granted + " of no cluster of this view"
	case cluster == "":
		// Named are only clusters the user may read, never how many more
		// there are.
		st.Allowed, st.Reason = true, fmt.Sprintf("%s of clusters %s; reads across clusters read those only", granted, strings.Join(allowed, ", "))
	default:
		st.Allowed, st.Reason = true, fmt.Sprintf("%s of clusters %s", granted, cluster)
	}
	return st
}

// reviewedResource is how Panorama names a reviewed resource and namespace
// when it authorizes a read: a type's attribute name, and no namespace for
// a type that has none in this view.
func (h *Handler) reviewedResource(cluster string, a *authorizationv1.ResourceAttributes) (resource, namespace string) {
	gr := schema.GroupResource{Group: a.Group, Resource: a.Resource}
	resource, namespace = memberResource(gr), a.Namespace
	if a.Resource == "*" {
		resource = "*" // every type of every group, as RBAC's "*" grants them
	}
	for _, res := range h.registry.Resources(cluster) {
		if res.GVR.GroupResource() == gr && !res.Namespaced {
			namespace = ""
		}
	}
	return resource, namespace
}

// rulesReview lists what the user may read in namespace through the view
// of cluster ("" for all clusters): each of its types with the read verbs
// allowed (in any cluster across clusters, as accessReview), then what
// every view serves to who sees it. Object names cannot be restricted, so
// no rule has resourceNames. Past the request's bound on checks it is
// Incomplete, as kube's is when its rules cannot all be resolved.
func (h *Handler) rulesReview(r *http.Request, cluster, namespace string) authorizationv1.SubjectRulesReviewStatus {
	var clusters []string
	if cluster != "" {
		clusters = []string{cluster}
	}
	st := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}}
	seen := map[schema.GroupResource]bool{}
	for _, res := range h.registry.Resources(cluster) {
		gr := res.GVR.GroupResource()
		if seen[gr] || st.Incomplete {
			continue // another version of the same type, or no checks left
		}
		seen[gr] = true
		ns := namespace
		if !res.Namespaced {
			ns = ""
		}
		var verbs []string
		for _, verb := range servedVerbs {
			ok, err := h.allowedInAny(r.Context(), verb, memberResource(gr), clusters, ns)
			if err != nil {
				st.Incomplete, st.EvaluationError = true, err.Error()
				break
			}
			if ok {
				verbs = append(verbs, verb)
			}
		}
		if len(verbs) > 0 {
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: verbs, APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}})
		}
	}
	reviews := authorizationv1.ResourceRule{Verbs: []string{"create"}, APIGroups: []string{authorizationv1.GroupName}}
	for _, res := range selfReviewResources {
		reviews.Resources = append(reviews.Resources, res.GVR.Resource)
	}
	st.ResourceRules = append(st.ResourceRules, reviews)
	st.NonResourceRules = []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version"}}}
	return st
}
