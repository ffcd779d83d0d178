package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// eventRetention is east's spec.eventRetention, after which it is cut to
// shortRetention to see Events pruned; west keeps the controller's (1h).
const eventRetention, shortRetention = 10 * time.Minute, 30 * time.Second

// TestEvents: Events created in real members, through both Event APIs,
// show in real kubectl describe through Panorama, in one cluster's view
// and across clusters; kubectl get events selects them by the field
// labels kube-apiserver has; an Event older than the Cluster's retention
// is never stored, and one that ages past it is pruned while the member
// still has it. Panorama runs as processes under the shipped RBAC.
func TestEvents(t *testing.T) {
	host := testenv.Start(t, testenv.WithAggregation(t))
	east := testenv.Start(t, testenv.WithoutCRDs())
	west := testenv.Start(t, testenv.WithoutCRDs())
	eastKube, westKube := kubernetes.NewForConfigOrDie(east.Config), kubernetes.NewForConfigOrDie(west.Config)
	for _, c := range []kubernetes.Interface{eastKube, westKube} {
		createNS(t, c, "web")
		createPod(t, c, "web", "web-1", "web")
	}
	createPod(t, eastKube, "web", "web-2", "web")

	dir := t.TempDir()
	apply(t, host, dir, clustersManifest(t, east, west))
	for _, name := range []string{"east", "west"} {
		host.Kubectl(t, "patch", "cluster", name, "--type=merge", "-p", `{"spec": {"syncResources": [
			{"group": "", "resources": ["pods", "events"]}, {"group": "events.k8s.io", "resources": ["events"]}]}}`)
	}
	setRetention := func(d time.Duration) {
		host.Kubectl(t, "patch", "cluster", "east", "--type=merge", "-p", fmt.Sprintf(`{"spec": {"eventRetention": %q}}`, d))
	}
	setRetention(eventRetention)
	startRegistered(t, host, dir, storagetest.Backends()[1].Options(t).DSN)
	alice := userKubeconfig(t, host, dir, "alice")
	apply(t, host, dir, rbacManifest)
	kubectl := func(args ...string) (string, error) {
		out, stderr, err := testenv.Kubectl(alice, args...)
		if err != nil {
			return "", fmt.Errorf("kubectl %v: %v: %s", args, err, stderr)
		}
		return out, nil
	}
	eventuallyT(t, func() error {
		_, err := kubectl("--context", "west", "get", "pod", "web-1", "-n", "web")
		return err
	})

	// Written in the members' order, so that once one is served every
	// earlier one has been synced (or not stored).
	ctx := context.Background()
	now := time.Now()
	pod := func(c kubernetes.Interface, name string) corev1.ObjectReference {
		p, err := c.CoreV1().Pods("web").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "web", Name: name, UID: p.UID}
	}
	coreEvent := func(c kubernetes.Interface, name string, about corev1.ObjectReference, typ, reason, message string, last time.Time) {
		t.Helper()
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name}, InvolvedObject: about,
			Type: typ, Reason: reason, Message: message, Source: corev1.EventSource{Component: "e2e-recorder"},
			FirstTimestamp: metav1.NewTime(last), LastTimestamp: metav1.NewTime(last), Count: 1}
		if _, err := c.CoreV1().Events("web").Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eastWeb1 := pod(eastKube, "web-1")
	coreEvent(eastKube, "e2e-stale", eastWeb1, "Normal", "PanoramaStale", "too old to be stored", now.Add(-3*time.Hour))
	coreEvent(eastKube, "e2e-other", pod(eastKube, "web-2"), "Normal", "PanoramaOther", "about another pod", now)
	coreEvent(eastKube, "e2e-pulled", eastWeb1, "Warning", "PanoramaPulled", "pulled through the member", now)
	coreEvent(westKube, "e2e-west", pod(westKube, "web-1"), "Normal", "PanoramaWest", "in the other cluster", now)
	noted := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "e2e-noted"}, Regarding: eastWeb1,
		EventTime: metav1.NewMicroTime(now), ReportingController: "example.com/e2e", ReportingInstance: "e2e-1",
		Action: "Check", Type: "Normal", Reason: "PanoramaNoted", Note: "noted through events.k8s.io"}
	if _, err := eastKube.EventsV1().Events("web").Create(ctx, noted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("kubectl describe shows the member's events", func(t *testing.T) {
		var out string
		eventuallyT(t, func() error {
			var err error
			if out, err = kubectl("--context", "east", "describe", "pod", "web-1", "-n", "web"); err != nil {
				return err
			}
			if !strings.Contains(out, "PanoramaNoted") {
				return fmt.Errorf("no Event yet:\n%s", out)
			}
			return nil
		})
		events := eventsSection(t, out)
		for _, want := range []string{"Warning", "PanoramaPulled", "e2e-recorder", "pulled through the member", "PanoramaNoted", "example.com/e2e", "noted through events.k8s.io"} {
			if !strings.Contains(events, want) {
				t.Errorf("the Events section lacks %q:\n%s", want, events)
			}
		}
		for _, not := range []string{"PanoramaStale", "PanoramaOther", "PanoramaWest"} {
			if strings.Contains(events, not) {
				t.Errorf("the Events section shows %s:\n%s", not, events)
			}
		}
		// kubectl events --for selects by involvedObject kind, apiVersion
		// and name.
		out, err := kubectl("--context", "east", "events", "-n", "web", "--for", "pod/web-1")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "PanoramaPulled") || !strings.Contains(out, "noted through events.k8s.io") || strings.Contains(out, "PanoramaOther") {
			t.Errorf("kubectl events --for pod/web-1:\n%s", out)
		}
		out, err = kubectl("--context", "west", "describe", "pod", "web-1", "-n", "web")
		if err != nil {
			t.Fatal(err)
		}
		if events := eventsSection(t, out); !strings.Contains(events, "PanoramaWest") || strings.Contains(events, "Panorama"+"Pulled") {
			t.Errorf("west's Events section:\n%s", events)
		}
	})
	t.Run("across clusters describe shows the events of the object it shows", func(t *testing.T) {
		out, stderr, err := testenv.Kubectl(alice, "describe", "pod", "web-1", "-n", "web")
		if err != nil {
			t.Fatalf("%v: %s", err, stderr)
		}
		// web/web-1 is in both: the get answers east's (first by name),
		// with a warning naming both, and its events by its uid.
		if !strings.Contains(stderr, "exists in 2 clusters (east, west)") || !strings.Contains(out, "panorama.io/cluster: east") {
			t.Errorf("describe across clusters:\n%s\n%s", stderr, out)
		}
		events := eventsSection(t, out)
		if !strings.Contains(events, "PanoramaPulled") || !strings.Contains(events, "PanoramaNoted") || strings.Contains(events, "PanoramaWest") {
			t.Errorf("Events across clusters:\n%s", events)
		}
	})
	t.Run("kubectl get events columns", func(t *testing.T) {
		for _, resource := range []string{"events", "events.events.k8s.io"} {
			out, err := kubectl("--context", "east", "get", resource, "-n", "web", "--field-selector", "reason=PanoramaPulled")
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "CLUSTER NAME LAST SEEN TYPE REASON OBJECT MESSAGE" ||
				!strings.Contains(lines[1], "pod/web-1") || !strings.Contains(lines[1], "pulled through the member") {
				t.Errorf("kubectl get %s:\n%s", resource, out)
			}
		}
	})
	t.Run("field selectors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--context", "east", "get", "events", "-n", "web", "--field-selector", "involvedObject.name=web-1"}, "e2e-noted e2e-pulled"},
			{[]string{"--context", "east", "get", "events", "-n", "web", "--field-selector",
				"involvedObject.name=web-1,involvedObject.namespace=web,involvedObject.kind=Pod,involvedObject.uid=" + string(eastWeb1.UID)}, "e2e-noted e2e-pulled"},
			{[]string{"get", "events", "-A", "--field-selector", "involvedObject.name=web-1"}, "e2e-noted e2e-pulled e2e-west"},
			{[]string{"--context", "east", "get", "events", "-n", "web", "--field-selector", "type=Warning"}, "e2e-pulled"},
			{[]string{"--context", "east", "get", "events", "-n", "web", "--field-selector", "reason=PanoramaOther"}, "e2e-other"},
			// source: source.component, else the reporting controller.
			{[]string{"--context", "east", "get", "events", "-n", "web", "--field-selector", "source=example.com/e2e"}, "e2e-noted"},
			{[]string{"--context", "east", "get", "events.events.k8s.io", "-n", "web", "--field-selector", "regarding.name=web-1"}, "e2e-noted e2e-pulled"},
			{[]string{"--context", "east", "get", "events.events.k8s.io", "-n", "web", "--field-selector",
				"regarding.name=web-1,regarding.kind=Pod,regarding.uid=" + string(eastWeb1.UID)}, "e2e-noted e2e-pulled"},
			{[]string{"--context", "east", "get", "events.events.k8s.io", "-n", "web", "--field-selector", "reportingController=example.com/e2e"}, "e2e-noted"},
		} {
			// Each Event API has its synchronizer, which may lag the other.
			eventuallyT(t, func() error {
				out, err := kubectl(append(c.args, "-o", "custom-columns=NAME:.metadata.name", "--no-headers")...)
				if err != nil {
					return err
				}
				got := strings.Fields(out)
				slices.Sort(got)
				if strings.Join(got, " ") != c.want {
					return fmt.Errorf("kubectl %v: %v, want %s", c.args, got, c.want)
				}
				return nil
			})
		}
	})
	t.Run("retention", func(t *testing.T) {
		notServed := func(name string) error {
			_, stderr, err := testenv.Kubectl(alice, "--context", "east", "get", "event", name, "-n", "web")
			if err == nil || !strings.Contains(stderr, "NotFound") {
				return fmt.Errorf("%s is served: %v %s", name, err, stderr)
			}
			if _, err := eastKube.CoreV1().Events("web").Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("the member lost %s, so this proves nothing of the retention: %v", name, err)
			}
			return nil
		}
		if err := notServed("e2e-stale"); err != nil {
			t.Errorf("an Event older than the retention on arrival: %v", err)
		}
		// The Cluster counts what is stored, under either API: the member's
		// Events within the retention (noted, pulled and other, and any the
		// member's own components posted meanwhile); not the stale one.
		eventuallyT(t, func() error {
			kept, err := eventsWithin(ctx, eastKube, eventRetention)
			if err != nil {
				return err
			}
			for _, name := range []string{"e2e-noted", "e2e-pulled", "e2e-other"} {
				if !slices.Contains(kept, "web/"+name) {
					return fmt.Errorf("the member's Events within the retention, %v, lack %s", kept, name)
				}
			}
			out := host.Kubectl(t, "get", "cluster", "east", "-o", `jsonpath={range .status.syncResources[?(@.resource=="events")]}{.group}={.count} {end}`)
			if want := fmt.Sprintf("=%d events.k8s.io=%[1]d", len(kept)); strings.TrimSpace(out) != want {
				return fmt.Errorf("event counts %q, want %q: the member's Events within the retention are %v", out, want, kept)
			}
			return nil
		})
		// A shorter retention drops what it does not keep (the synchronizer
		// restarts and lists again), then stores a new Event until it ages
		// past it, when the prune deletes it.
		setRetention(shortRetention)
		eventuallyT(t, func() error { return notServed("e2e-pulled") })
		coreEvent(eastKube, "e2e-expiring", eastWeb1, "Normal", "PanoramaExpiring", "pruned soon", time.Now())
		eventuallyT(t, func() error {
			_, err := kubectl("--context", "east", "get", "event", "e2e-expiring", "-n", "web")
			return err
		})
		eventuallyT(t, func() error { return notServed("e2e-expiring") })
	})
}

// eventsWithin names (namespace/name) the member's Events, in every
// namespace, last seen within retention of now: what the Cluster should
// count.
func eventsWithin(ctx context.Context, c kubernetes.Interface, retention time.Duration) ([]string, error) {
	list, err := c.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&list.Items[i])
		if err != nil {
			return nil, err
		}
		if time.Since(storage.EventLastSeen(&unstructured.Unstructured{Object: obj})) <= retention {
			out = append(out, list.Items[i].Namespace+"/"+list.Items[i].Name)
		}
	}
	return out, nil
}

// eventsSection is what kubectl describe prints from its "Events:" line on.
func eventsSection(t *testing.T, describe string) string {
	t.Helper()
	_, events, ok := strings.Cut(describe, "\nEvents:")
	if !ok {
		t.Fatalf("no Events section:\n%s", describe)
	}
	return events
}
