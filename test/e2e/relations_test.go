package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/test/testenv"
)

// keysOf prints each object of a list as cluster/namespace/name, a line
// each: the cluster is the annotation Panorama sets, so the answers of the
// view of all clusters tell the clusters apart.
const keysOf = `-o=jsonpath={range .items[*]}{.metadata.annotations.panorama\.io/cluster}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`

// TestRelations asks, by kubectl as its users would, what refers to a
// Secret, which Services select a pod, and what a pod or a Service
// refers to, across two real members. The objects are made after
// Panorama has synced the members, so that the answers are those of
// objects as they arrive; every answer is checked against the one
// computed from the members' own objects, before and after the members
// change. eve, whose grants name east only, learns nothing of west.
func TestRelations(t *testing.T) {
	// Secrets are not synced: which pods name one is what the pods say.
	f := startClientFleet(t, "rel", fleetOptions{alsoSync: ", services, configmaps"})
	ctx := context.Background()
	m := relMembers{"east": f.eastKube, "west": f.westKube}
	writeShop(t, f.eastKube, "worker-0")
	writeShop(t, f.westKube, "report-0")
	eventuallyT(t, func() error { return m.synced(f.ada) })

	users := map[string]string{"ada": f.ada, "eve": f.eve}
	questions := relQuestions()
	t.Run("the members' answers", func(t *testing.T) {
		// The members' answers, computed, are the ones the objects above
		// were made for: the comparisons below are not of two empty lists.
		s := m.read(t)
		for question, want := range map[string][]string{
			"pods naming db-pass": s.podsNaming(both, ref("Secret", "", "db-pass")),
			"svc selecting web-0": s.servicesSelecting(both, "shop", "web-0"),
			"pods of svc web":     s.podsSelectedBy(both, "shop", "web"),
			"cm of web-0":         s.configMapsOf(both, "shop", "web-0"),
		} {
			if fixed := initialAnswers[question]; !slices.Equal(want, fixed) {
				t.Errorf("%s: computed %v, want %v", question, want, fixed)
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

	t.Run("the table of all clusters", func(t *testing.T) {
		want := m.read(t).podsNaming(both, ref("Secret", "", "db-pass"))
		table := strings.Split(strings.TrimSpace(kubectlAs(t, f.ada, "get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_db-pass")), "\n")
		if head := strings.Join(strings.Fields(table[0]), " "); head != "NAMESPACE CLUSTER NAME READY STATUS RESTARTS AGE" {
			t.Errorf("header %q", head)
		}
		var got []string
		for _, row := range table[1:] {
			f := strings.Fields(row)
			got = append(got, f[1]+"/"+f[0]+"/"+f[2])
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("rows %v, the members %v", got, want)
		}
	})

	t.Run("answers follow the members", func(t *testing.T) {
		// web-1 of east now takes its environment from other (a pod's
		// envFrom cannot change: it is made again), and web-0 leaves
		// Service web, keeping tier=backend, which api selects.
		pods := f.eastKube.CoreV1().Pods("shop")
		deletePod(t, f.eastKube, "shop", "web-1")
		eventuallyT(t, func() error {
			if _, err := pods.Get(ctx, "web-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("web-1 not yet deleted: %v", err)
			}
			return nil
		})
		if _, err := pods.Create(ctx, shopPod("web-1", map[string]string{"app": "web"}, envFromSecret("other")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Patch(ctx, "web-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"web-canary"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		s := m.read(t)
		if got := s.podsNaming(both, ref("Secret", "", "db-pass")); slices.Contains(got, "east/shop/web-1") {
			t.Fatalf("east's web-1 still names db-pass: %v", got)
		}
		if got := s.servicesSelecting(both, "shop", "web-0"); slices.Contains(got, "east/shop/web") || !slices.Contains(got, "east/shop/api") {
			t.Fatalf("east's web-0 selected by %v: want api and not web", got)
		}
		for _, q := range questions {
			eventuallyT(t, func() error { return q.ask(users[q.user], m.read(t)) })
		}
	})

	t.Run("a user who may read east only", func(t *testing.T) {
		// report-0 is west's alone: what it refers to is not eve's to know,
		// though ada learns it.
		if want := m.read(t).configMapsOf(both, "shop", "report-0"); len(want) == 0 {
			t.Fatalf("west's report-0 refers to no ConfigMap")
		}
		for _, args := range [][]string{
			{"get", "cm", "-n", "shop", "-l", "search.panorama.io/referredBy=pod_report-0"},
			{"get", "pods", "-n", "shop", "-l", "search.panorama.io/referredBy=svc_shop_web"},
			{"get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_db-pass"},
		} {
			out, stderr, err := testenv.Kubectl(f.eve, append(args, keysOf)...)
			if err != nil || strings.Contains(out, "west/") {
				t.Errorf("eve's %v: %v %q %q", args, err, out, stderr)
			}
		}
		_, stderr, err := testenv.Kubectl(f.eve, "--context", "west", "get", "pods", "-n", "shop", "-l", "search.panorama.io/refersTo=secret_db-pass")
		if exitCode(err) != 1 || !strings.HasPrefix(stderr, "Error from server (Forbidden): ") {
			t.Errorf("eve asking west: %v %q", err, stderr)
		}
	})

	t.Run("bad values", func(t *testing.T) {
		for value, message := range map[string]string{
			"refersTo=secret":        `refersTo "secret": want type/name`,
			"refersTo=nothing_x":     `no kind is named "nothing"`,
			"referredBy=svc_a_b_c_d": `referredBy "svc_a_b_c_d": want type/name`,
		} {
			out, stderr, err := testenv.Kubectl(f.ada, "get", "pods", "-A", "-l", "search.panorama.io/"+value)
			if exitCode(err) != 1 || out != "" || !strings.HasPrefix(stderr, "Error from server (BadRequest): ") || !strings.Contains(stderr, message) {
				t.Errorf("%s: exit %d, %q %q; want a BadRequest saying %q", value, exitCode(err), out, stderr, message)
			}
		}
	})
}

// both are the clusters ada reads; eve reads east only.
var (
	both     = []string{"east", "west"}
	eastOnly = []string{"east"}
)

// initialAnswers are the members' answers to a few questions, as
// writeShop and the client fleet make them.
var initialAnswers = map[string][]string{
	"pods naming db-pass": {"east/shop/web-0", "east/shop/web-1", "east/shop/worker-0", "west/shop/report-0", "west/shop/web-0", "west/shop/web-1"},
	"svc selecting web-0": {"east/shop/api", "east/shop/web", "west/shop/api", "west/shop/web"},
	"pods of svc web":     {"east/shop/web-0", "east/shop/web-1", "east/shop/web-5d9-x7k2p", "west/shop/web-0", "west/shop/web-1"},
	"cm of web-0":         {"east/shop/env-config", "east/shop/web-config", "west/shop/env-config", "west/shop/web-config"},
}

// relQuestion is a question asked by kubectl as a user, and its answer
// from the members' objects, as cluster/namespace/name sorted.
type relQuestion struct {
	user string
	args []string
	want func(s relSnapshot) []string
}

// relQuestions are what TestRelations asks, before and after the members
// change.
func relQuestions() []relQuestion {
	dbPass := ref("Secret", "", "db-pass")
	return []relQuestion{
		// Which pods, in any cluster, mount Secret db-pass: in all
		// clusters, in each, in the namespace named.
		{"ada", []string{"get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_db-pass"},
			func(s relSnapshot) []string { return s.podsNaming(both, dbPass) }},
		{"ada", []string{"--context", "east", "get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_db-pass"},
			func(s relSnapshot) []string { return s.podsNaming(eastOnly, dbPass) }},
		{"ada", []string{"--context", "west", "get", "pods", "-A", "-l", "search.panorama.io/refersTo=secrets_db-pass"},
			func(s relSnapshot) []string { return s.podsNaming([]string{"west"}, dbPass) }},
		{"ada", []string{"get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_shop_db-pass"},
			func(s relSnapshot) []string { return s.podsNaming(both, ref("Secret", "shop", "db-pass")) }},
		{"ada", []string{"get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_billing_db-pass"},
			func(s relSnapshot) []string { return s.podsNaming(both, ref("Secret", "billing", "db-pass")) }},
		{"ada", []string{"get", "pods", "-A", "-l", "search.panorama.io/refersTo in (secret_other,cm_bundle-config)"},
			func(s relSnapshot) []string {
				return s.podsNaming(both, ref("Secret", "", "other"), ref("ConfigMap", "", "bundle-config"))
			}},
		// Which Services select pod web-0.
		{"ada", []string{"get", "svc", "-n", "shop", "-l", "search.panorama.io/refersTo=pod_web-0"},
			func(s relSnapshot) []string { return s.servicesSelecting(both, "shop", "web-0") }},
		{"ada", []string{"--context", "east", "get", "services", "-n", "shop", "-l", "search.panorama.io/refersTo=pods_shop_web-0"},
			func(s relSnapshot) []string { return s.servicesSelecting(eastOnly, "shop", "web-0") }},
		// What a Service selects, and what a pod refers to; a Service
		// without a selector selects nothing.
		{"ada", []string{"get", "pods", "-n", "shop", "-l", "search.panorama.io/referredBy=svc_web"},
			func(s relSnapshot) []string { return s.podsSelectedBy(both, "shop", "web") }},
		{"ada", []string{"get", "pods", "-n", "shop", "-l", "search.panorama.io/referredBy=svc_external"},
			func(s relSnapshot) []string { return s.podsSelectedBy(both, "shop", "external") }},
		{"ada", []string{"get", "cm", "-n", "shop", "-l", "search.panorama.io/referredBy=pod_web-0"},
			func(s relSnapshot) []string { return s.configMapsOf(both, "shop", "web-0") }},
		{"ada", []string{"get", "cm", "-n", "shop", "-l", "search.panorama.io/referredBy=pod_report-0"},
			func(s relSnapshot) []string { return s.configMapsOf(both, "shop", "report-0") }},
		// eve, asking every cluster, is answered from east's objects.
		{"eve", []string{"get", "pods", "-A", "-l", "search.panorama.io/refersTo=secret_db-pass"},
			func(s relSnapshot) []string { return s.podsNaming(eastOnly, dbPass) }},
		{"eve", []string{"get", "pods", "-n", "shop", "-l", "search.panorama.io/referredBy=svc_web"},
			func(s relSnapshot) []string { return s.podsSelectedBy(eastOnly, "shop", "web") }},
		{"eve", []string{"get", "svc", "-n", "shop", "-l", "search.panorama.io/refersTo=pod_web-0"},
			func(s relSnapshot) []string { return s.servicesSelecting(eastOnly, "shop", "web-0") }},
		{"eve", []string{"get", "cm", "-n", "shop", "-l", "search.panorama.io/referredBy=pod_report-0"},
			func(s relSnapshot) []string { return s.configMapsOf(eastOnly, "shop", "report-0") }},
	}
}

// ask compares kubectl's answer with the members'.
func (q relQuestion) ask(kubeconfig string, s relSnapshot) error {
	out, stderr, err := testenv.Kubectl(kubeconfig, append(q.args, keysOf)...)
	if err != nil {
		return fmt.Errorf("%s: kubectl %v: %v: %s", q.user, q.args, err, stderr)
	}
	if got, want := sortedLines(out), q.want(s); !slices.Equal(got, want) {
		return fmt.Errorf("%s: kubectl %v answers %v, the members %v", q.user, q.args, got, want)
	}
	return nil
}

// writeShop writes in namespace shop of a member Secrets db-pass and
// other, ConfigMaps its pods name (and one none does), pods naming
// db-pass in a secret volume (web-0), in envFrom (web-1) and, as the
// member's own pod, in a projected volume (worker-0) or an env var
// (report-0), a pod naming other alone (batch-0), and Services web
// (app=web), api (tier=backend) and external, without a selector.
func writeShop(t *testing.T, c kubernetes.Interface, own string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"db-pass", "other"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"password": "x"}}
		if _, err := c.CoreV1().Secrets("shop").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"web-config", "env-config", "bundle-config", "unused-config"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"key": "v"}}
		if _, err := c.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// web-0 also names a ConfigMap no member has, which no answer lists.
	pods := []*corev1.Pod{
		shopPod("web-0", map[string]string{"app": "web", "tier": "backend"}, secretVolume("db-pass"), configMapVolume("web-config"),
			env(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: local("env-config"), Key: "key"}}),
			env(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: local("missing-config"), Key: "key", Optional: ptrTo(true)}})),
		shopPod("web-1", map[string]string{"app": "web"}, envFromSecret("db-pass")),
		shopPod("batch-0", map[string]string{"app": "batch"}, secretVolume("other")),
	}
	switch own {
	case "worker-0":
		pods = append(pods, shopPod(own, map[string]string{"app": "worker", "tier": "backend"}, projected("db-pass", "bundle-config")))
	case "report-0":
		pods = append(pods, shopPod(own, map[string]string{"app": "report"}, configMapVolume("web-config"),
			env(corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: local("db-pass"), Key: "password"}})))
	}
	for _, p := range pods {
		if _, err := c.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, selector := range map[string]map[string]string{"web": {"app": "web"}, "api": {"tier": "backend"}, "external": nil} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := c.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// shopPod is a pod of namespace shop with one container, which each of
// with shapes.
func shopPod(name string, labels map[string]string, with ...func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	for _, w := range with {
		w(&p.Spec)
	}
	return p
}

func local(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

func volume(name string, source corev1.VolumeSource) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: name, VolumeSource: source})
	}
}

func secretVolume(secret string) func(*corev1.PodSpec) {
	return volume("secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}})
}

func configMapVolume(cm string) func(*corev1.PodSpec) {
	return volume("config", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: local(cm)}})
}

func projected(secret, cm string) func(*corev1.PodSpec) {
	return volume("bundle", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: local(secret)}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: local(cm)}},
	}}})
}

func env(source corev1.EnvVarSource) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		c := &s.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR%d", len(c.Env)), ValueFrom: &source})
	}
}

func envFromSecret(secret string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		c := &s.Containers[0]
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: local(secret)}})
	}
}

// relMembers are the members' clients, by cluster name.
type relMembers map[string]kubernetes.Interface

// relSnapshot is the members' pods, Services and ConfigMaps, by cluster.
type relSnapshot map[string]*memberObjects

type memberObjects struct {
	pods       []corev1.Pod
	services   []corev1.Service
	configMaps []corev1.ConfigMap
}

// read lists the members' objects.
func (m relMembers) read(t *testing.T) relSnapshot {
	t.Helper()
	ctx := context.Background()
	s := relSnapshot{}
	for cluster, c := range m {
		pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		services, err := c.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		configMaps, err := c.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s[cluster] = &memberObjects{pods: pods.Items, services: services.Items, configMaps: configMaps.Items}
	}
	return s
}

// synced reports whether ada's view of namespace shop holds the members'
// pods, Services and ConfigMaps (which are not updated once made, but for
// what the test changes), so that the answers below are asked of what
// Panorama has synced.
func (m relMembers) synced(ada string) error {
	var want []string
	for cluster, c := range m {
		ctx := context.Background()
		pods, err := c.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		services, err := c.CoreV1().Services("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		configMaps, err := c.CoreV1().ConfigMaps("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			want = append(want, "Pod/"+cluster+"/shop/"+p.Name)
		}
		for _, s := range services.Items {
			want = append(want, "Service/"+cluster+"/shop/"+s.Name)
		}
		for _, cm := range configMaps.Items {
			want = append(want, "ConfigMap/"+cluster+"/shop/"+cm.Name)
		}
	}
	slices.Sort(want)
	out, stderr, err := testenv.Kubectl(ada, "get", "pods,services,configmaps", "-n", "shop",
		`-o=jsonpath={range .items[*]}{.kind}/{.metadata.annotations.panorama\.io/cluster}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
	if err != nil {
		return fmt.Errorf("%v: %s", err, stderr)
	}
	if got := sortedLines(out); !slices.Equal(got, want) {
		return fmt.Errorf("Panorama has %v, the members %v", got, want)
	}
	return nil
}

// objectRef is an object a pod names: a Secret or a ConfigMap, in any
// namespace when namespace is "".
type objectRef struct{ kind, namespace, name string }

func ref(kind, namespace, name string) objectRef { return objectRef{kind, namespace, name} }

// podRefs are the Secrets and ConfigMaps a pod names in its volumes,
// projected volumes, env and envFrom.
func podRefs(p *corev1.Pod) []objectRef {
	var out []objectRef
	add := func(kind string, name string) { out = append(out, objectRef{kind, p.Namespace, name}) }
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			add("Secret", v.Secret.SecretName)
		}
		if v.ConfigMap != nil {
			add("ConfigMap", v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add("Secret", s.Secret.Name)
				}
				if s.ConfigMap != nil {
					add("ConfigMap", s.ConfigMap.Name)
				}
			}
		}
	}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add("Secret", e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name)
			}
		}
	}
	return out
}

// names reports whether r, as a pod names it, is target.
func (target objectRef) names(r objectRef) bool {
	return r.kind == target.kind && r.name == target.name && (target.namespace == "" || r.namespace == target.namespace)
}

// selects reports whether a Service selects a pod, as kube's endpoints
// controllers decide: a Service without a selector selects none.
func selects(svc *corev1.Service, p *corev1.Pod) bool {
	return svc.Namespace == p.Namespace && len(svc.Spec.Selector) > 0 &&
		labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels))
}

func objectKey(cluster string, o metav1.Object) string {
	return cluster + "/" + o.GetNamespace() + "/" + o.GetName()
}

// keys are the sorted keys of the objects that selected adds, given each
// of clusters' objects in turn.
func (s relSnapshot) keys(clusters []string, selected func(m *memberObjects, add func(metav1.Object))) []string {
	var keys []string
	for _, cluster := range clusters {
		selected(s[cluster], func(o metav1.Object) { keys = append(keys, objectKey(cluster, o)) })
	}
	slices.Sort(keys)
	return keys
}

// pod is the member's pod of namespace and name, nil if none.
func (m *memberObjects) pod(namespace, name string) *corev1.Pod {
	i := slices.IndexFunc(m.pods, func(p corev1.Pod) bool { return p.Namespace == namespace && p.Name == name })
	if i < 0 {
		return nil
	}
	return &m.pods[i]
}

// service is the member's Service of namespace and name, nil if none.
func (m *memberObjects) service(namespace, name string) *corev1.Service {
	i := slices.IndexFunc(m.services, func(s corev1.Service) bool { return s.Namespace == namespace && s.Name == name })
	if i < 0 {
		return nil
	}
	return &m.services[i]
}

// podsNaming are the pods of clusters that name one of targets.
func (s relSnapshot) podsNaming(clusters []string, targets ...objectRef) []string {
	return s.keys(clusters, func(m *memberObjects, add func(metav1.Object)) {
		for i := range m.pods {
			p := &m.pods[i]
			if slices.ContainsFunc(podRefs(p), func(r objectRef) bool {
				return slices.ContainsFunc(targets, func(target objectRef) bool { return target.names(r) })
			}) {
				add(p)
			}
		}
	})
}

// servicesSelecting are the Services of clusters that select a pod named
// pod in namespace.
func (s relSnapshot) servicesSelecting(clusters []string, namespace, pod string) []string {
	return s.keys(clusters, func(m *memberObjects, add func(metav1.Object)) {
		p := m.pod(namespace, pod)
		for j := range m.services {
			if svc := &m.services[j]; p != nil && selects(svc, p) {
				add(svc)
			}
		}
	})
}

// podsSelectedBy are the pods of clusters that a Service named service in
// namespace selects.
func (s relSnapshot) podsSelectedBy(clusters []string, namespace, service string) []string {
	return s.keys(clusters, func(m *memberObjects, add func(metav1.Object)) {
		svc := m.service(namespace, service)
		for j := range m.pods {
			if p := &m.pods[j]; svc != nil && selects(svc, p) {
				add(p)
			}
		}
	})
}

// configMapsOf are the ConfigMaps of clusters that a pod named pod in
// namespace names, those its member has.
func (s relSnapshot) configMapsOf(clusters []string, namespace, pod string) []string {
	return s.keys(clusters, func(m *memberObjects, add func(metav1.Object)) {
		p := m.pod(namespace, pod)
		if p == nil {
			return
		}
		refs := podRefs(p)
		for j := range m.configMaps {
			if cm := &m.configMaps[j]; slices.Contains(refs, objectRef{"ConfigMap", cm.Namespace, cm.Name}) {
				add(cm)
			}
		}
	})
}
