package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// reviewServer is testServer with cluster east serving pods and secrets.
func reviewServer(t *testing.T) *rest.Config {
	_, cfg, reg := testServer(t)
	east := clusterServing("east", podsGVR, "Pod")
	east.Status.SyncResources = append(east.Status.SyncResources, clusterServing("", podsGVR.GroupVersion().WithResource("secrets"), "Secret").Status.SyncResources...)
	reg.Set(east)
	return cfg
}

func accessReview(t *testing.T, cfg *rest.Config, spec authorizationv1.SelfSubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	t.Helper()
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	return review.Status, nil
}

func read(verb, resource, namespace string) authorizationv1.SelfSubjectAccessReviewSpec {
	return authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: namespace}}
}

// TestSelfSubjectAccessReview: a view's self access review answers what
// its reads would: the user's grants in that cluster, in any cluster across
// clusters, and never a write.
func TestSelfSubjectAccessReview(t *testing.T) {
	cfg := reviewServer(t)
	for _, c := range []struct {
		user, cluster string
		spec          authorizationv1.SelfSubjectAccessReviewSpec
		allowed       bool
		reason        string
	}{
		{"east", "east", read("list", "pods", "default"), true, "allows list pods (search.panorama.io) in namespace default of clusters east"},
		{"east", "east", read("watch", "pods", ""), true, "in any namespace"},
		{"east", "east", read("list", "secrets", "default"), false, "allows list secrets (search.panorama.io) in namespace default of no cluster"},
		{"east", "east", read("create", "pods", "default"), false, "read-only"},
		{"east", "east", read("delete", "pods", "default"), false, "delete is never allowed"},
		{"east", "east", read("*", "pods", "default"), false, "read-only"},
		{"east", "east", authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "pods", Subresource: "log", Namespace: "default"}}, false, "no subresource"},
		// Across clusters, what a read would answer: east's pods, and
		// nothing of west, which east's user may not read.
		{"east", "", read("list", "pods", "default"), true, "of clusters east; reads across clusters read those only"},
		{"nsuser", "", read("list", "pods", "ns"), true, "in namespace ns of every cluster"},
		{"nsuser", "", read("list", "pods", "other"), false, "of no cluster"},
		{"nsuser", "", read("list", "pods", ""), false, "of no cluster"}, // -A needs a cluster-wide grant
		{"services", "", read("list", "services", ""), true, ""},
		{"admin", "", read("list", "*", ""), true, ""},
		{"nobody", "", read("list", "pods", "ns"), false, ""},
		{"east", "east", authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/apis"}}, true, ""},
		{"nobody", "", authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/version"}}, true, ""},
		{"admin", "", authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}}, false, "only get of discovery"},
	} {
		st, err := accessReview(t, as(cfg, c.user, c.cluster), c.spec)
		if err != nil || st.Allowed != c.allowed || !strings.Contains(st.Reason, c.reason) {
			t.Errorf("%s in view %q, %+v %+v: %+v %v", c.user, c.cluster, c.spec.ResourceAttributes, c.spec.NonResourceAttributes, st, err)
		}
	}
	// A protobuf body, as clients configured for it send.
	pb := as(cfg, "east", "east")
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	if st, err := accessReview(t, pb, read("get", "pods", "web")); err != nil || !st.Allowed {
		t.Errorf("protobuf review: %+v %v", st, err)
	}
	// A cluster the user may not see (no get clusters), or that does not
	// exist, is 404 as its discovery is, whatever else they may read there.
	for _, c := range []struct{ user, cluster string }{{"east", "west"}, {"nsuser", "west"}, {"admin", "south"}} {
		if _, err := accessReview(t, as(cfg, c.user, c.cluster), read("list", "pods", "ns")); !apierrors.IsNotFound(err) {
			t.Errorf("%s reviews in %s: %v, want 404", c.user, c.cluster, err)
		}
	}
}

// TestSelfSubjectRulesReview: a view's rules review lists the types of the
// view the user may read in the namespace, and what every view serves.
func TestSelfSubjectRulesReview(t *testing.T) {
	cfg := reviewServer(t)
	for _, c := range []struct {
		user, cluster, namespace string
		want                     []string
	}{
		{"east", "east", "default", []string{"pods [get list watch]"}},
		{"east", "", "default", []string{"pods [get list watch]"}},
		{"nsuser", "", "ns", []string{"pods [get list watch]"}},
		{"nsuser", "", "other", nil},
		{"services", "", "default", nil}, // no cluster of the view syncs services
		// Every view serves the CRDs of what it syncs (crds.go).
		{"admin", "east", "default", []string{"pods [get list watch]", "secrets [get list watch]", "customresourcedefinitions [get list watch]"}},
		{"nobody", "", "default", nil},
	} {
		review, err := kubernetes.NewForConfigOrDie(as(cfg, c.user, c.cluster)).AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
			&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: c.namespace}}, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		var got []string
		for _, r := range review.Status.ResourceRules {
			if slices.Equal(r.APIGroups, []string{authorizationv1.GroupName}) {
				if !slices.Equal(r.Verbs, []string{"create"}) || !slices.Equal(r.Resources, []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}) {
					t.Errorf("%+v: review rule %+v", c, r)
				}
				continue
			}
			got = append(got, fmt.Sprintf("%s %v", strings.Join(r.Resources, ","), r.Verbs))
		}
		if !slices.Equal(got, c.want) || len(review.Status.NonResourceRules) != 1 || review.Status.Incomplete {
			t.Errorf("%+v: rules %q, status %+v", c, got, review.Status)
		}
	}
}

// TestSelfReviewDiscovery: every view's discovery has the review types,
// which clients (k9s) look for before they ask.
func TestSelfReviewDiscovery(t *testing.T) {
	cfg := reviewServer(t)
	for _, cluster := range []string{"", "east"} {
		list, err := discovery.NewDiscoveryClientForConfigOrDie(as(cfg, "east", cluster)).ServerResourcesForGroupVersion("authorization.k8s.io/v1")
		if err != nil {
			t.Fatalf("view %q: %v", cluster, err)
		}
		var got []string
		for _, r := range list.APIResources {
			got = append(got, r.Name+" "+strings.Join(r.Verbs, ","))
		}
		if !slices.Equal(got, []string{"selfsubjectaccessreviews create", "selfsubjectrulesreviews create"}) {
			t.Errorf("view %q: %v", cluster, got)
		}
		// kubectl's RESTMapper reads aggregated discovery.
		_, resources, err := discovery.NewDiscoveryClientForConfigOrDie(as(cfg, "east", cluster)).ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		var gvs []string
		for _, r := range resources {
			gvs = append(gvs, r.GroupVersion)
		}
		if slices.Sort(gvs); !slices.Equal(gvs, []string{"apiextensions.k8s.io/v1", "authorization.k8s.io/v1", "v1"}) {
			t.Errorf("view %q: aggregated discovery has %v", cluster, gvs)
		}
	}
}

// TestSelfReviewBadRequests: bad bodies and methods are answered with a
// Status, never a 500.
func TestSelfReviewBadRequests(t *testing.T) {
	cfg := reviewServer(t)
	access := viewURL(cfg, "/clusters/east/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
	rules := viewURL(cfg, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews")
	for _, c := range []struct {
		method, url, body string
		code              int
	}{
		{http.MethodPost, access, `{"spec":{"resourceAttributes":{"verb":"list","resource":"pods"}}}`, http.StatusCreated}, // kind from the path
		{http.MethodPost, access, `{`, http.StatusBadRequest},
		{http.MethodPost, access, `[]`, http.StatusBadRequest},
		{http.MethodPost, access, `{"apiVersion":"v1","kind":"Pod"}`, http.StatusBadRequest},
		{http.MethodPost, access, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview"}`, http.StatusBadRequest},
		{http.MethodPost, access, `{"spec":{}}`, http.StatusUnprocessableEntity},
		{http.MethodPost, access, `{"spec":{"resourceAttributes":{},"nonResourceAttributes":{}}}`, http.StatusUnprocessableEntity},
		{http.MethodPost, access, `"` + strings.Repeat("x", maxReviewBytes) + `"`, http.StatusRequestEntityTooLarge},
		{http.MethodPost, rules, `{"spec":{"namespace":1}}`, http.StatusBadRequest},
		{http.MethodGet, access, ``, http.StatusMethodNotAllowed},
		{http.MethodDelete, rules, ``, http.StatusMethodNotAllowed},
		{http.MethodPost, viewURL(cfg, "/version"), `{}`, http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != c.code || (c.code != http.StatusCreated && st.Kind != "Status") {
			t.Errorf("%s %s %.40q: %d %+v, want %d", c.method, c.url, c.body, resp.StatusCode, st, c.code)
		}
	}
}

// TestSelfReviewRequestInfo: the generic server's filters see a self
// review under any view as kube-apiserver's own, which the host lets every
// authenticated user create, and other writes as writes of Panorama's
// resources, which nobody is granted.
func TestSelfReviewRequestInfo(t *testing.T) {
	resolver := requestInfoResolver{delegate: &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}}
	for path, want := range map[string]string{
		"/clusters/east/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": "create authorization.k8s.io selfsubjectaccessreviews ",
		"/apis/authorization.k8s.io/v1/selfsubjectrulesreviews":                "create authorization.k8s.io selfsubjectrulesreviews ",
		"/apis/authorization.k8s.io/v1/selfsubjectrulesreviews/x":              "create search.panorama.io resources ",
		"/clusters/east/apis/authorization.k8s.io/v1/subjectaccessreviews":     "create search.panorama.io resources east",
		"/clusters/east/api/v1/namespaces/ns/pods":                             "create search.panorama.io resources east",
	} {
		info, err := resolver.NewRequestInfo(httptest.NewRequest(http.MethodPost, ResourcesPrefix+path, bytes.NewReader(nil)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join([]string{info.Verb, info.APIGroup, info.Resource, info.Name}, " "); got != want || info.Path != ResourcesPrefix+path {
			t.Errorf("POST %s: %q %s, want %q", path, got, info.Path, want)
		}
		attrs := authorizer.AttributesRecord{Verb: info.Verb, APIGroup: info.APIGroup, Resource: info.Resource, Name: info.Name, ResourceRequest: info.IsResourceRequest}
		if d, _, _ := handledByPanorama.Authorize(context.Background(), attrs); d != authorizer.DecisionNoOpinion {
			t.Errorf("POST %s passes without the host's word", path)
		}
	}
}
