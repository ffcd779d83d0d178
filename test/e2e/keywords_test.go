package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/test/testenv"
)

// digest is the sha256 digest of the image east's api-0 and billing-0
// run: as a word, 64 characters, the most a word keeps.
const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// TestKeywords asks, by kubectl as its users would, which objects mention
// a word of an incident, a ticket id, a hostname, an image digest, across
// two real members: by the label selector search.panorama.io/q in the
// view of all clusters and in one cluster's, and by the parameter q for
// a prefix and for several words. Every answer is checked against the one
// computed from the members' own objects by Panorama's rule of words
// (storage.FieldSet.Describe), before and after the members change. eve,
// whose grants name east only, learns nothing of west; a query without a
// word is a BadRequest that says why.
func TestKeywords(t *testing.T) {
	f := startClientFleet(t, "kw", fleetOptions{alsoSync: ", services, configmaps"})
	m := relMembers{"east": f.eastKube, "west": f.westKube}
	writeIncident(t, f.eastKube, "east")
	writeIncident(t, f.westKube, "west")
	eventuallyT(t, func() error { return m.synced(f.ada) })

	users := map[string]string{"ada": f.ada, "eve": f.eve}
	questions := keywordQuestions(t)
	t.Run("the members' answers", func(t *testing.T) {
		// The members' answers, computed, are the ones the objects were
		// made for: the comparisons below are not of two empty lists, nor
		// of lists that every object is in.
		s := m.read(t)
		for _, c := range []struct {
			resource string
			terms    []string
			want     []string
		}{
			{"pods", []string{"INC-4711"}, []string{"east/shop/api-0", "east/shop/billing-0", "west/shop/api-0"}},
			{"pods", []string{"inc*"}, []string{"east/shop/api-0", "east/shop/api-1", "east/shop/billing-0", "west/shop/api-0", "west/shop/api-1"}},
			{"pods", []string{"sha256:" + digest}, []string{"east/shop/api-0", "east/shop/billing-0"}},
			{"configmaps", []string{"db.internal.example"}, []string{"east/shop/db-endpoint", "east/shop/runbook", "west/shop/db-endpoint"}},
			{"pods", []string{"internal", "example"}, []string{"east/shop/api-0", "west/shop/api-0", "west/shop/batch-0"}},
			{"services", []string{"db.internal.example"}, []string{"east/shop/db", "west/shop/db"}},
		} {
			if got := s.mentioning(c.resource, both, mustKeywords(t, c.terms...)); !slices.Equal(got, c.want) {
				t.Errorf("%s mentioning %v: computed %v, want %v", c.resource, c.terms, got, c.want)
			}
		}
	})
	t.Run("kubectl's answers", func(t *testing.T) {
		s := m.read(t)
		for _, q := range questions {
			if err := q.ask(users[q.user], s); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("answers follow the members", func(t *testing.T) {
		// east's api-0 loses its ticket, east's runbook is deleted, and
		// west writes a postmortem that names the ticket and the host.
		ctx := context.Background()
		if _, err := f.eastKube.CoreV1().Pods("shop").Patch(ctx, "api-0", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"oncall.example.com/ticket":null}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := f.eastKube.CoreV1().ConfigMaps("shop").Delete(ctx, "runbook", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		postmortem := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "postmortem",
			Annotations: map[string]string{"oncall.example.com/notes": "INC-4711: db.internal.example ran out of connections"}}}
		if _, err := f.westKube.CoreV1().ConfigMaps("shop").Create(ctx, postmortem, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := m.read(t)
		if got := s.mentioning("pods", both, mustKeywords(t, "INC-4711")); slices.Contains(got, "east/shop/api-0") {
			t.Fatalf("east's api-0 still mentions INC-4711: %v", got)
		}
		if got := s.mentioning("configmaps", both, mustKeywords(t, "db.internal.example")); slices.Contains(got, "east/shop/runbook") || !slices.Contains(got, "west/shop/postmortem") {
			t.Fatalf("ConfigMaps mentioning db.internal.example %v: want west's postmortem and not east's runbook", got)
		}
		for _, q := range questions {
			eventuallyT(t, func() error { return q.ask(users[q.user], m.read(t)) })
		}
	})

	t.Run("a user who may read east only", func(t *testing.T) {
		// west's postmortem and batch-0 are west's alone: ada finds them,
		// eve does not.
		for _, args := range [][]string{
			{"get", "configmaps", "-A", "-l", "search.panorama.io/q=INC-4711"},
			{"get", "pods", "-A", "-l", "search.panorama.io/q=internal"},
		} {
			if out := kubectlAs(t, f.ada, append(args, keysOf)...); !strings.Contains(out, "west/") {
				t.Errorf("ada's %v finds nothing of west: %q", args, out)
			}
			out, stderr, err := testenv.Kubectl(f.eve, append(args, keysOf)...)
			if err != nil || strings.Contains(out, "west/") {
				t.Errorf("eve's %v: %v %q %q", args, err, out, stderr)
			}
		}
		_, stderr, err := testenv.Kubectl(f.eve, "--context", "west", "get", "--raw", "/api/v1/pods?q=inc*")
		if exitCode(err) != 1 || !strings.HasPrefix(stderr, "Error from server (Forbidden): ") {
			t.Errorf("eve asking west: %v %q", err, stderr)
		}
	})

	t.Run("bad values", func(t *testing.T) {
		for _, c := range []struct {
			args    []string
			message string
		}{
			{[]string{"get", "--raw", "/api/v1/pods?q=---"}, `"---" has no word`},
			{[]string{"get", "--raw", "/api/v1/pods?q=web,*"}, `"*" has no word`},
			{[]string{"get", "--raw", "/api/v1/configmaps?q=a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q"}, "17 words, more than the 16 allowed"},
			{[]string{"get", "pods", "-A", "-l", "search.panorama.io/q=web*"}, "a valid label must be"},
			{[]string{"get", "pods", "-A", "-l", "search.panorama.io/q!=web"}, `search label "search.panorama.io/q" takes =, == or in`},
		} {
			out, stderr, err := testenv.Kubectl(f.ada, c.args...)
			if exitCode(err) != 1 || out != "" || !strings.HasPrefix(stderr, "Error from server (BadRequest): ") || !strings.Contains(stderr, c.message) {
				t.Errorf("%v: exit %d, %q %q; want a BadRequest saying %q", c.args, exitCode(err), out, stderr, c.message)
			}
		}
	})
}

// keywordQuestion asks kubectl, as user, which objects of resource in
// clusters have every word of keywords: by a label selector, or by
// get --raw, whose answer is a list as JSON.
type keywordQuestion struct {
	user     string
	args     []string
	resource string
	clusters []string
	keywords []storage.Keyword
}

// keywordQuestions are what TestKeywords asks, before and after the
// members change.
func keywordQuestions(t *testing.T) []keywordQuestion {
	west := []string{"west"}
	ticket, host := mustKeywords(t, "INC-4711"), mustKeywords(t, "db.internal.example")
	return []keywordQuestion{
		// Which pods, ConfigMaps and Services mention the ticket or the
		// host, in all clusters and in each; label values are whole
		// words, of any case.
		{"ada", []string{"get", "pods", "-A", "-l", "search.panorama.io/q=INC-4711"}, "pods", both, ticket},
		{"ada", []string{"--context", "east", "get", "pods", "-A", "-l", "search.panorama.io/q=inc-4711"}, "pods", eastOnly, ticket},
		{"ada", []string{"--context", "west", "get", "configmaps", "-n", "shop", "-l", "search.panorama.io/q=INC-4711"}, "configmaps", west, ticket},
		{"ada", []string{"get", "configmaps", "-A", "-l", "search.panorama.io/q=db.internal.example"}, "configmaps", both, host},
		{"ada", []string{"get", "services", "-A", "-l", "search.panorama.io/q=db.internal.example"}, "services", both, host},
		{"ada", []string{"get", "pods", "-A", "-l", "search.panorama.io/q in (internal),search.panorama.io/q=example"}, "pods", both, mustKeywords(t, "internal", "example")},
		// A prefix, a digest, and several terms, all required, by q.
		{"ada", []string{"get", "--raw", "/api/v1/pods?q=inc*"}, "pods", both, mustKeywords(t, "inc*")},
		{"ada", []string{"--context", "west", "get", "--raw", "/api/v1/pods?q=inc*"}, "pods", west, mustKeywords(t, "inc*")},
		{"ada", []string{"get", "--raw", "/api/v1/pods?q=sha256:" + digest}, "pods", both, mustKeywords(t, "sha256:"+digest)},
		{"ada", []string{"get", "--raw", "/api/v1/pods?q=9f86d0*"}, "pods", both, mustKeywords(t, "9f86d0*")},
		{"ada", []string{"get", "--raw", "/api/v1/configmaps?q=db.internal.example,inc-4711"}, "configmaps", both, mustKeywords(t, "db.internal.example", "inc-4711")},
		{"ada", []string{"get", "--raw", "/api/v1/namespaces/shop/pods?q=internal&q=example"}, "pods", both, mustKeywords(t, "internal", "example")},
		// eve, asking every cluster, is answered from east's objects.
		{"eve", []string{"get", "pods", "-A", "-l", "search.panorama.io/q=INC-4711"}, "pods", eastOnly, ticket},
		{"eve", []string{"get", "configmaps", "-A", "-l", "search.panorama.io/q=db.internal.example"}, "configmaps", eastOnly, host},
		{"eve", []string{"get", "--raw", "/api/v1/pods?q=inc*"}, "pods", eastOnly, mustKeywords(t, "inc*")},
	}
}

// ask compares kubectl's answer with the members'.
func (q keywordQuestion) ask(kubeconfig string, s relSnapshot) error {
	args := q.args
	raw := slices.Contains(args, "--raw")
	if !raw {
		args = append(slices.Clip(args), keysOf)
	}
	out, stderr, err := testenv.Kubectl(kubeconfig, args...)
	if err != nil {
		return fmt.Errorf("%s: kubectl %v: %v: %s", q.user, q.args, err, stderr)
	}
	got := sortedLines(out)
	if raw {
		if got, err = listKeys(out); err != nil {
			return fmt.Errorf("%s: kubectl %v: %v", q.user, q.args, err)
		}
	}
	if want := s.mentioning(q.resource, q.clusters, q.keywords); !slices.Equal(got, want) {
		return fmt.Errorf("%s: kubectl %v answers %v, the members %v", q.user, q.args, got, want)
	}
	return nil
}

// listKeys are the objects of a list as JSON, as keysOf prints them,
// sorted.
func listKeys(list string) ([]string, error) {
	var l struct {
		Items []metav1.PartialObjectMetadata
	}
	if err := json.Unmarshal([]byte(list), &l); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(l.Items))
	for _, o := range l.Items {
		keys = append(keys, o.Annotations[storage.ClusterAnnotation]+"/"+o.Namespace+"/"+o.Name)
	}
	slices.Sort(keys)
	return keys, nil
}

func mustKeywords(t *testing.T, terms ...string) []storage.Keyword {
	t.Helper()
	keywords, err := storage.ParseKeywords(terms)
	if err != nil {
		t.Fatal(err)
	}
	return keywords
}

// mentioning are the objects of resource (pods, services or configmaps)
// in clusters that have every one of keywords among their words, as
// Panorama describes the members' objects.
func (s relSnapshot) mentioning(resource string, clusters []string, keywords []storage.Keyword) []string {
	return s.keys(clusters, func(m *memberObjects, add func(metav1.Object)) {
		for _, o := range m.of(resource) {
			words := storage.BuiltinFields.Describe(schema.GroupResource{Resource: resource}, o).Keywords
			if !slices.ContainsFunc(keywords, func(k storage.Keyword) bool { return !k.Matches(words) }) {
				add(o)
			}
		}
	})
}

// of are a member's objects of resource, unstructured as Panorama reads
// them.
func (o *memberObjects) of(resource string) []*unstructured.Unstructured {
	var objects []any
	switch resource {
	case "pods":
		for i := range o.pods {
			objects = append(objects, &o.pods[i])
		}
	case "services":
		for i := range o.services {
			objects = append(objects, &o.services[i])
		}
	case "configmaps":
		for i := range o.configMaps {
			objects = append(objects, &o.configMaps[i])
		}
	}
	out := make([]*unstructured.Unstructured, len(objects))
	for i, obj := range objects {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			panic(err) // a typed object of client-go always converts
		}
		out[i] = &unstructured.Unstructured{Object: content}
	}
	return out
}

// writeIncident writes in namespace shop of a member what an incident
// leaves: pods api-0, naming ticket INC-4711 and its upstream
// db.internal.example, and api-1, ticket INC-4712; ConfigMap db-endpoint
// and Service db, which annotate the host. east alone has billing-0,
// labelled with the ticket, running the image of digest as api-0 does,
// and ConfigMap runbook, naming the ticket and the host; west alone has
// batch-0, whose note says internal and example but not db.
func writeIncident(t *testing.T, c kubernetes.Interface, cluster string) {
	t.Helper()
	ctx := context.Background()
	image := "registry.example/api:2.1"
	if cluster == "east" {
		image = "registry.example/api@sha256:" + digest
	}
	pods := []*corev1.Pod{
		incidentPod("api-0", image, nil, map[string]string{"oncall.example.com/ticket": "INC-4711", "oncall.example.com/upstream": "db.internal.example:5432"}),
		incidentPod("api-1", "registry.example/api:2.1", nil, map[string]string{"oncall.example.com/ticket": "INC-4712"}),
	}
	configMaps := []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "db-endpoint", Annotations: map[string]string{"oncall.example.com/upstream": "db.internal.example"}}}}
	switch cluster {
	case "east":
		pods = append(pods, incidentPod("billing-0", image, map[string]string{"incident": "inc-4711"}, nil))
		configMaps = append(configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "runbook",
			Annotations: map[string]string{"oncall.example.com/notes": "INC-4711: fail db.internal.example over"}}})
	case "west":
		pods = append(pods, incidentPod("batch-0", "busybox", nil, map[string]string{"note": "internal example only"}))
	}
	for _, p := range pods {
		if _, err := c.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cm := range configMaps {
		if _, err := c.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "db.internal.example"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 5432}}}}
	if _, err := c.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func incidentPod(name, image string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
}
