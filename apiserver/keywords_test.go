package apiserver

import (
	"net/url"
	"strings"
	"testing"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// TestKeywords asks where words appear, by URL parameter and by search
// label, in every cluster and in one, from storage and from the watch
// cache, as a list, a count and in a collection, and checks each answer
// against the objects relatedFleet stores: their names, labels and the
// names they refer to.
func TestKeywords(t *testing.T) {
	_, base := relatedFleet(t)
	label := func(s string) string { return "labelSelector=" + url.QueryEscape(s) }
	for _, tc := range []struct{ path, query, want string }{
		{"/api/v1/pods", "q=web", "east/web-0 east/web-1 west/web-0"},
		{"/api/v1/pods", "q=WEB", "east/web-0 east/web-1 west/web-0"},
		{"/api/v1/pods", "q=old", "east/web-1"},                                      // secret db-pass-old
		{"/api/v1/pods", "q=db-pass", "east/api-0 east/web-0 east/web-1 west/web-0"}, // db and pass
		{"/api/v1/pods", "q=front", "east/web-0"},                                    // label tier=front
		{"/api/v1/pods", "q=nginx,back", "west/web-0"},
		{"/api/v1/pods", "q=nginx%20back", "west/web-0"},
		{"/api/v1/pods", "q=app*", "east/api-0 east/web-0 east/web-1 west/web-0"}, // app, the label's key
		{"/api/v1/pods", "q=fro*,web", "east/web-0"},
		{"/api/v1/pods", "q=web&clusters=west", "west/web-0"},
		{"/api/v1/pods", "q=we", ""},
		{"/api/v1/pods", "q=web&labelSelector=tier", "east/web-0 west/web-0"},
		{"/api/v1/pods", label("search.panorama.io/q=old"), "east/web-1"},
		{"/api/v1/pods", label("search.panorama.io/q=web,search.panorama.io/q in (front)"), "east/web-0"},
		{"/api/v1/configmaps", "q=api", "east/cfg-api-0"},
		{"/api/v1/namespaces/shop/services", "q=externalname", "east/alias"}, // spec.type
	} {
		for _, rv := range []string{"", "&resourceVersion=0"} {
			code, _, got := getJSON(t, base+tc.path+"?"+tc.query+rv, "")
			if code != 200 || relatedNames(t, got) != tc.want {
				t.Errorf("%s?%s%s: %d %v\n got %s\nwant %s", tc.path, tc.query, rv, code, got["message"], relatedNames(t, got), tc.want)
			}
		}
	}
	for _, rv := range []string{"", "&resourceVersion=0"} {
		if code, _, body := getCounts(t, base+"/api/v1/pods?q=web&groupBy=cluster"+rv, "", ""); code != 200 || body.groups() != "east=2 west=1" {
			t.Errorf("counts of q=web%s: %d %s", rv, code, body.groups())
		}
	}
	east := strings.Replace(base, "/clusters/_all/", "/clusters/east/", 1)
	if code, _, got := getJSON(t, east+"/api/v1/pods?q=web", ""); code != 200 || relatedNames(t, got) != "east/web-0 east/web-1" {
		t.Errorf("east's view: %d %s", code, relatedNames(t, got))
	}
	var got map[string]any
	if code, _ := getAs(t, base+"/api/v1/pods?q=web", "east", "", &got); code != 200 || relatedNames(t, got) != "east/web-0 east/web-1" {
		t.Errorf("a user of east alone: %d %s", code, relatedNames(t, got))
	}
	collections := strings.TrimSuffix(base, searchv1alpha1.ViewPath("")) + CollectionsPath + "/networking?"
	if code, _ := getAs(t, collections+"q=web", "", "", &got); code != 200 || relatedNames(t, got) != "east/shop east/web west/web" {
		t.Errorf("networking objects that mention web: %d %s", code, relatedNames(t, got))
	}
	for _, query := range []string{
		"q=---",
		"q=*",
		"q=web,*",
		"q=ap*", // shorter than a prefix may be
		"q=a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q",
		label("search.panorama.io/q!=web"),
		label("search.panorama.io/q in (web,front)"), // every word is required: not in
	} {
		if code, _, got := getJSON(t, base+"/api/v1/pods?"+query, ""); code != 400 || got["kind"] != "Status" {
			t.Errorf("%s: %d %v, want 400", query, code, got)
		}
	}
}
