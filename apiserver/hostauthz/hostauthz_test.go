package hostauthz_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/panorama-io/panorama/apiserver/hostauthz"
	"github.com/panorama-io/panorama/test/testenv"
)

// matrixUsers are the matrix's users, each granted as its comment says by
// matrixGrants.
var matrixUsers = map[string]user.Info{
	"nobody":     &user.DefaultInfo{Name: "nobody", Groups: []string{user.AllAuthenticated}},
	"oneCluster": &user.DefaultInfo{Name: "one-cluster", Groups: []string{user.AllAuthenticated}}, // pods of cluster east (resourceNames)
	"namespace":  &user.DefaultInfo{Name: "namespace", Groups: []string{user.AllAuthenticated}},   // pods in namespace web of every cluster (RoleBinding)
	"oneType":    &user.DefaultInfo{Name: "one-type", Groups: []string{user.AllAuthenticated}},    // deployments.apps everywhere
	"secrets":    &user.DefaultInfo{Name: "secrets", Groups: []string{user.AllAuthenticated}},     // secrets only, everywhere
	"aggregated": &user.DefaultInfo{Name: "aggregated", Groups: []string{user.AllAuthenticated}},  // pods, through an aggregated ClusterRole
	"masters":    &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},
	"group":      &user.DefaultInfo{Name: "someone", Groups: []string{"readers", user.AllAuthenticated}}, // pods everywhere, granted to group readers
	"sa":         serviceaccount.UserInfo("web", "reader", ""),                                           // pods in namespace web, granted to the ServiceAccount
}

const group = "search.panorama.io"

// readRule grants the read verbs of resources in Panorama's group.
func readRule(resourceNames []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, ResourceNames: resourceNames, Verbs: []string{"get", "list", "watch"}}
}

// matrixGrants writes the matrix's grants into the host.
func matrixGrants(t *testing.T, client kubernetes.Interface) {
	ctx := context.Background()
	clusterRole := func(name string, labels map[string]string, agg *rbacv1.AggregationRule, rules ...rbacv1.PolicyRule) {
		t.Helper()
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules: rules, AggregationRule: agg}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(role string, subject rbacv1.Subject) {
		t.Helper()
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	userSubject := func(name string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
	}
	clusterRole("one-cluster", nil, nil, readRule([]string{"east"}, "pods"))
	bind("one-cluster", userSubject("one-cluster"))
	clusterRole("one-type", nil, nil, readRule(nil, "deployments.apps"))
	bind("one-type", userSubject("one-type"))
	clusterRole("secrets", nil, nil, readRule(nil, "secrets"))
	bind("secrets", userSubject("secrets"))
	clusterRole("readers", nil, nil, readRule(nil, "pods"))
	bind("readers", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "readers"})
	// The aggregated role has no rules of its own: the aggregation
	// controller copies those of the roles its selector matches.
	clusterRole("aggregated", nil, &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"panorama.io/aggregate-to-readers": "true"}}}})
	clusterRole("aggregated-pods", map[string]string{"panorama.io/aggregate-to-readers": "true"}, nil, readRule(nil, "pods"))
	bind("aggregated", userSubject("aggregated"))

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().Roles("web").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Rules: []rbacv1.PolicyRule{readRule(nil, "pods")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().RoleBindings("web").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
		Subjects: []rbacv1.Subject{userSubject("namespace"), {Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: "web"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hostWithGrants starts a host with matrixGrants, its aggregated
// ClusterRole filled by kube's own aggregation controller (the host's
// controller manager's), and returns an admin client and the real
// delegated authorizer asking it by SubjectAccessReview, uncached.
func hostWithGrants(t *testing.T) (kubernetes.Interface, authorizer.Authorizer) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	client := kubernetes.NewForConfigOrDie(env.Config)
	matrixGrants(t, client)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	controllerInformers := informers.NewSharedInformerFactory(client, 0)
	aggregation := clusterroleaggregation.NewClusterRoleAggregation(controllerInformers.Rbac().V1().ClusterRoles(), client.RbacV1())
	controllerInformers.Start(ctx.Done())
	go aggregation.Run(ctx, 1)
	testenv.Eventually(t, 30*time.Second, func() error {
		role, err := client.RbacV1().ClusterRoles().Get(ctx, "aggregated", metav1.GetOptions{})
		if err == nil && len(role.Rules) == 0 {
			err = fmt.Errorf("ClusterRole aggregated not aggregated yet")
		}
		return err
	})

	sar, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             time.Nanosecond, DenyCacheTTL: time.Nanosecond,
		WebhookRetryBackoff: genericoptions.DefaultAuthWebhookRetryBackoff(),
	}.New()
	if err != nil {
		t.Fatal(err)
	}
	return client, sar
}

// inProcess is o's authorizer over informers of client's host, synced,
// and its readiness checks.
func inProcess(t *testing.T, client kubernetes.Interface, o hostauthz.Options, webhook authorizer.Authorizer) (authorizer.Authorizer, []healthz.HealthChecker) {
	factory := informers.NewSharedInformerFactory(client, 0)
	authz, ready, err := o.New(factory, webhook, genericoptions.NewDelegatingAuthorizationOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for _, check := range ready {
		if err := check.Check(nil); err != nil {
			t.Fatalf("%s after the caches synced: %v", check.Name(), err)
		}
	}
	return authz, ready
}

// TestAuthorizationMatrix: the default mode, the host's RBAC in process,
// answers every question Panorama asks as the host does when asked by
// SubjectAccessReview.
func TestAuthorizationMatrix(t *testing.T) {
	client, sar := hostWithGrants(t)
	rbac, _ := inProcess(t, client, hostauthz.NewOptions(), nil)
	ctx := context.Background()
	allowed := map[string]int{}
	for who, u := range matrixUsers {
		for _, resource := range []string{"pods", "secrets", "deployments.apps", "clusters"} {
			for _, verb := range []string{"get", "list", "watch"} {
				for _, cluster := range []string{"", "east", "west"} {
					for _, namespace := range []string{"", "web", "default"} {
						a := authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1alpha1",
							Resource: resource, Name: cluster, Namespace: namespace, ResourceRequest: true}
						want, _, wantErr := sar.Authorize(ctx, a)
						got, reason, err := rbac.Authorize(ctx, a)
						if wantErr != nil || err != nil || (got == authorizer.DecisionAllow) != (want == authorizer.DecisionAllow) {
							t.Errorf("%s %s %s of cluster %q in namespace %q: in process %v (%s, %v), the host %v (%v)",
								who, verb, resource, cluster, namespace, got, reason, err, want, wantErr)
						}
						if want == authorizer.DecisionAllow {
							allowed[who]++
						}
					}
				}
			}
		}
	}
	// The matrix can fail: each grant allows what it should, and no more.
	for who, n := range map[string]int{
		"nobody": 0, "oneCluster": 3 * 3, "namespace": 3 * 3, "oneType": 3 * 9, "secrets": 3 * 9,
		"aggregated": 3 * 9, "masters": 4 * 3 * 9, "group": 3 * 9, "sa": 3 * 3,
	} {
		if allowed[who] != n {
			t.Errorf("%s is allowed %d of the questions, want %d", who, allowed[who], n)
		}
	}
}

// TestUnsyncedRBACAllowsNothing: before its caches sync, RBAC allows
// nothing and its readiness check fails.
func TestUnsyncedRBACAllowsNothing(t *testing.T) {
	factory := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"}), 0)
	authz, ready, err := hostauthz.NewOptions().New(factory, nil, genericoptions.NewDelegatingAuthorizationOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) != 1 || ready[0].Check(nil) == nil {
		t.Errorf("readiness before the caches synced: %v", ready)
	}
	a := authorizer.AttributesRecord{User: matrixUsers["group"], Verb: "list", APIGroup: group, Resource: "pods", ResourceRequest: true}
	if d, _, err := authz.Authorize(context.Background(), a); d == authorizer.DecisionAllow || err == nil {
		t.Errorf("unsynced: %v %v, want no allow and an error", d, err)
	}
	// The privileged groups need no cache.
	a.User = matrixUsers["masters"]
	if d, _, _ := authz.Authorize(context.Background(), a); d != authorizer.DecisionAllow {
		t.Errorf("system:masters unsynced: %v", d)
	}
}

// TestValidate: modes are known, each once, at least one.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		modes []string
		valid bool
	}{
		{[]string{"RBAC"}, true}, {[]string{"RBAC", "Webhook"}, true}, {[]string{"Webhook"}, true}, {[]string{"Webhook", "RBAC"}, true},
		{nil, false}, {[]string{"rbac"}, false}, {[]string{"RBAC", "RBAC"}, false}, {[]string{"AlwaysAllow"}, false},
	} {
		o := hostauthz.NewOptions()
		o.Modes = c.modes
		if errs := o.Validate(); (len(errs) == 0) != c.valid {
			t.Errorf("%v: %v", c.modes, errs)
		}
	}
	o := hostauthz.NewOptions()
	o.RBACStaleAfter = 0
	if errs := o.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "--authorization-rbac-stale-after") {
		t.Errorf("a staleness bound of 0: %v", errs)
	}
}

// TestStaleRBACAllowsNothing cuts the host away from RBAC's informers:
// once a cache has heard nothing from the host for the bound (on a clock
// of the test's), RBAC allows nothing and its readiness check fails, until
// the caches hear from the host again.
func TestStaleRBACAllowsNothing(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	admin := kubernetes.NewForConfigOrDie(env.Config)
	matrixGrants(t, admin)
	host, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, host.Host)
	cfg := rest.CopyConfig(env.Config)
	cfg.Host = "https://" + proxy.Addr
	clk := clocktesting.NewFakePassiveClock(time.Now())
	o := hostauthz.NewOptions()
	o.SetClock(clk)
	authz, ready := inProcess(t, kubernetes.NewForConfigOrDie(cfg), o, nil)
	a := authorizer.AttributesRecord{User: matrixUsers["group"], Verb: "list", APIGroup: group, Resource: "pods", ResourceRequest: true}
	decide := func() (authorizer.Decision, error) {
		d, _, err := authz.Authorize(context.Background(), a)
		if d == authorizer.DecisionAllow {
			// Readiness says what the decisions do.
			if err := ready[0].Check(nil); err != nil {
				return authorizer.DecisionNoOpinion, fmt.Errorf("allowed while not ready: %w", err)
			}
		}
		return d, err
	}
	// touch writes an object of each RBAC kind, which each cache hears of.
	touches := 0
	touch := func() error {
		touches++
		name := fmt.Sprintf("touch-%d", touches)
		ctx, meta := context.Background(), metav1.ObjectMeta{Name: name}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "touch"}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref}, metav1.CreateOptions{}); err != nil {
			return err
		}
		meta.Namespace = "web"
		if _, err := admin.RbacV1().Roles("web").Create(ctx, &rbacv1.Role{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := admin.RbacV1().RoleBindings("web").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref}, metav1.CreateOptions{})
		return err
	}
	if d, err := decide(); d != authorizer.DecisionAllow {
		t.Fatalf("before the outage: %v %v, want allowed", d, err)
	}
	clk.SetTime(clk.Now().Add(o.RBACStaleAfter / 2))
	if d, err := decide(); d != authorizer.DecisionAllow {
		t.Fatalf("within the bound: %v %v, want allowed", d, err)
	}

	proxy.Down()
	clk.SetTime(clk.Now().Add(o.RBACStaleAfter))
	if d, err := decide(); d == authorizer.DecisionAllow || err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("with the host away past the bound: %v %v, want no allow and a stale error", d, err)
	}
	if err := ready[0].Check(nil); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("readiness with the host away past the bound: %v, want a stale error", err)
	}

	proxy.Up(t)
	testenv.Eventually(t, time.Minute, func() error {
		if err := touch(); err != nil {
			return err
		}
		if d, err := decide(); d != authorizer.DecisionAllow {
			return fmt.Errorf("with the host back: %v %v, want allowed", d, err)
		}
		return nil
	})
}
