package agent_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/panorama-io/panorama/agent"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestProxy puts ReadOnly(NewProxy) in front of a real kube-apiserver, with
// an agent identity that may only read ConfigMaps, and uses it as the hub
// does, with client-go and no credentials: reads pass, with the agent's
// identity whatever the hub asks for, a watch streams each event as it
// happens, and a write is refused before it reaches the member.
func TestProxy(t *testing.T) {
	member := testenv.Start(t, testenv.WithoutCRDs())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := client.New(member.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	create(t, ctx, admin, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	})
	create(t, ctx, admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-reads-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "read-configmaps"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "agent"}},
	})
	create(t, ctx, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	create(t, ctx, admin, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "shop"}})

	user, err := member.Env.AddUser(envtest.User{Name: "agent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := agent.NewProxy(user.Config())
	if err != nil {
		t.Fatal(err)
	}
	// Secrets forwarded: what keeps them from the hub here is the member's
	// refusal of the agent, whatever identity the hub claims.
	tunnelEnd := httptest.NewServer(agent.ReadOnly(proxy, true))
	defer tunnelEnd.Close()
	hub := kubernetes.NewForConfigOrDie(&rest.Config{Host: tunnelEnd.URL})

	if v, err := hub.Discovery().ServerVersion(); err != nil || v.GitVersion == "" {
		t.Fatalf("/version through the agent: %v, %v", v, err)
	}
	if _, err := hub.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1"); err != nil {
		t.Fatalf("discovery through the agent: %v", err)
	}
	list, err := hub.CoreV1().ConfigMaps("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list through the agent: %v", err)
	}
	if names := configMapNames(list.Items); names != "a" {
		t.Fatalf("listed %s, want a", names)
	}

	w, err := hub.CoreV1().ConfigMaps("shop").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch through the agent: %v", err)
	}
	defer w.Stop()
	// The watch is open: each change now reaches the hub as it happens,
	// before the member ends the response.
	for _, name := range []string{"b", "c"} {
		create(t, ctx, admin, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}})
		select {
		case e := <-w.ResultChan():
			if cm, ok := e.Object.(*corev1.ConfigMap); e.Type != watch.Added || !ok || cm.Name != name {
				t.Fatalf("watch sent %s %#v, want ADDED %s", e.Type, e.Object, name)
			}
		case <-ctx.Done():
			t.Fatalf("the watch sent no event of %s", name)
		}
	}

	// The member serves the hub as the agent, whomever the hub names.
	asAdmin := kubernetes.NewForConfigOrDie(&rest.Config{Host: tunnelEnd.URL, BearerToken: "hub-token",
		Impersonate: rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}})
	if _, err := asAdmin.CoreV1().Secrets("shop").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "agent" cannot list resource "secrets"`) {
		t.Errorf("listing Secrets impersonating an admin through the agent: %v, want the member to refuse the agent", err)
	}

	// A write never reaches the member, even from a hub that may write.
	_, err = asAdmin.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written", Namespace: "shop"}}, metav1.CreateOptions{})
	if !apierrors.IsMethodNotSupported(err) || !strings.Contains(err.Error(), "the agent forwards only GET to the member: POST is not allowed") {
		t.Errorf("create through the agent: %v, want the agent's 405", err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "written"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap in the member: %v", err)
	}
	err = hub.CoreV1().ConfigMaps("shop").Delete(ctx, "a", metav1.DeleteOptions{})
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("delete through the agent: %v, want the agent's 405", err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "a"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap the hub tried to delete: %v", err)
	}
}

// create creates obj in the member as its admin.
func create(t *testing.T, ctx context.Context, admin client.Client, obj client.Object) {
	t.Helper()
	if err := admin.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

func configMapNames(items []corev1.ConfigMap) string {
	var names []string
	for _, cm := range items {
		names = append(names, cm.Name)
	}
	return strings.Join(names, ",")
}
