package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// clientFleet is what the tests of Panorama's clients (the MCP server, the
// kubectl plugin, the search page) run against: a host with Panorama
// registered under the chart's identities, and two members, east and
// west, each with namespace shop and pods labelled app=<label> (cart-0 to
// cart-2 in east, cart-0 in west), and in east the owned objects. ada
// reads everything and may list the host's Clusters; eve reads east only.
type clientFleet struct {
	host               *testenv.Env
	eastKube, westKube kubernetes.Interface
	web                ownedObjects
	dir                string
	// ada and eve are the users' kubeconfigs.
	ada, eve string
}

// fleetOptions are how a client's test differs from the others'.
type fleetOptions struct {
	// before makes objects in the members before Panorama syncs them.
	before func(eastKube, westKube kubernetes.Interface)
	// alsoSync are resources synced beside pods, namespaces, events,
	// deployments and replicasets (", configmaps").
	alsoSync string
	// eveListsClusters grants eve the list of the host's Clusters too.
	eveListsClusters bool
}

// startClientFleet starts the fleet of the clients' tests, pods labelled
// app=label, and waits for both Clusters to be Ready.
func startClientFleet(t *testing.T, label string, opts fleetOptions) *clientFleet {
	t.Helper()
	host := testenv.Start(t, testenv.WithAggregation(t))
	east := testenv.Start(t, testenv.WithoutCRDs())
	west := testenv.Start(t, testenv.WithoutCRDs())
	f := &clientFleet{host: host, eastKube: kubernetes.NewForConfigOrDie(east.Config), westKube: kubernetes.NewForConfigOrDie(west.Config), dir: t.TempDir()}
	db := storagetest.Backends()[1].Options(t)

	createNS(t, f.eastKube, "shop")
	createNS(t, f.westKube, "shop")
	for i := range 3 {
		createPod(t, f.eastKube, "shop", fmt.Sprintf("cart-%d", i), label)
	}
	createPod(t, f.westKube, "shop", "cart-0", label)
	// A Deployment, its ReplicaSet and their Pod, written as the members'
	// controllers would (envtest runs none), and an Event of the Pod.
	f.web = owned(t, f.eastKube)
	if opts.before != nil {
		opts.before(f.eastKube, f.westKube)
	}

	clusters := strings.NewReplacer("resources: [pods, namespaces, secrets]", "resources: [pods, namespaces, events"+opts.alsoSync+"]",
		"resources: [deployments, statefulsets]", "resources: [deployments, replicasets]").Replace(clustersManifest(t, east, west))
	apply(t, host, f.dir, clusters)
	startRegistered(t, host, f.dir, db.DSN)
	host.Kubectl(t, "wait", "--for=condition=Ready", "--timeout=90s", "cluster/east", "cluster/west")

	listClusters := `{apiGroups: [cluster.panorama.io], resources: [clusters], verbs: [list]}`
	eveRules := []string{pathsRule, `{apiGroups: [search.panorama.io], resources: ["*"], resourceNames: [east], verbs: [get, list, watch]}`}
	if opts.eveListsClusters {
		eveRules = append(eveRules, listClusters)
	}
	apply(t, host, f.dir, grant("clients-ada", "", []string{pathsRule, readRule(`"*"`), listClusters}, "ada")+
		grant("clients-eve", "", eveRules, "eve"))
	f.ada, f.eve = userKubeconfig(t, host, f.dir, "ada"), userKubeconfig(t, host, f.dir, "eve")
	return f
}

// memberPods are the pods labelled app=label of the named members, as
// cluster/namespace/name, sorted: what a search across them must find.
func (f *clientFleet) memberPods(t *testing.T, label string, clusters ...string) []string {
	t.Helper()
	kubes := map[string]kubernetes.Interface{"east": f.eastKube, "west": f.westKube}
	var keys []string
	for _, cluster := range clusters {
		pods, err := kubes[cluster].CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + label})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			keys = append(keys, cluster+"/"+p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(keys)
	return keys
}

// ownedObjects are a Deployment of east, its ReplicaSet, their Pod and an
// Event of the Pod.
type ownedObjects struct {
	*appsv1.Deployment
	rs    *appsv1.ReplicaSet
	pod   *corev1.Pod
	event *corev1.Event
}

// owned writes in namespace shop a Deployment, a ReplicaSet it controls,
// a Pod that ReplicaSet controls (PodScheduled False, as a scheduler
// writes it) and a Warning Event of the Pod.
func owned(t *testing.T, c kubernetes.Interface) ownedObjects {
	t.Helper()
	ctx := context.Background()
	one := int32(1)
	labels := map[string]string{"app": "web"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}
	d, err := c.AppsV1().Deployments("shop").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d9", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptrTo(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := c.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d9-x7k2p", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptrTo(true)}}},
		Spec: spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/0 nodes are available"}}
	if pod, err = c.CoreV1().Pods("shop").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now())
	ev, err := c.CoreV1().Events("shop").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".backoff"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod.Name, UID: pod.UID, APIVersion: "v1"},
		Type:           corev1.EventTypeWarning, Reason: "BackOff", Message: "Back-off restarting failed container app",
		Source: corev1.EventSource{Component: "kubelet"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ownedObjects{Deployment: d, rs: rs, pod: pod, event: ev}
}
