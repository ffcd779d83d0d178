package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/panorama-io/panorama/test/testenv"
)

// controllerNamespace is where the shipped manifests run the controller.
const controllerNamespace = "panorama-system"

// shippedIdentity makes the controller's ServiceAccount in the host, bound to
// the roles of config/rbac/role.yaml, and returns a config that impersonates
// it. Every request it denies fails t: the controller must need no more than
// it is shipped with.
func shippedIdentity(t *testing.T, host *testenv.Env) *rest.Config {
	t.Helper()
	hc := hostClient(t, host)
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const sa = "panorama"
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: controllerNamespace, Name: sa}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: sa}},
		// As the chart binds it: TokenReviews, of /metrics scrapers and of
		// agents opening tunnels.
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "panorama-auth-delegator"}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		},
	}
	var kinds []string
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		switch tm.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, &r, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: r.Name}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name},
			})
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				t.Fatal(err)
			}
			if r.Namespace != controllerNamespace {
				t.Fatalf("role.yaml: Role %s in namespace %q, want %q", r.Name, r.Namespace, controllerNamespace)
			}
			objs = append(objs, &r, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
			})
		default:
			continue
		}
		kinds = append(kinds, tm.Kind)
	}
	if fmt.Sprint(kinds) != "[ClusterRole Role]" {
		t.Fatalf("role.yaml holds %v, want a ClusterRole and a Role", kinds)
	}
	for _, o := range objs {
		// A restarted manager finds them made.
		if err := hc.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	cfg := rest.CopyConfig(host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", controllerNamespace, sa)}
	var mu sync.Mutex
	var denied []string
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusForbidden {
				mu.Lock()
				denied = append(denied, req.Method+" "+req.URL.RequestURI())
				mu.Unlock()
			}
			return resp, err
		})
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(denied) > 0 {
			t.Errorf("the shipped role denied %d requests of the controller: %v", len(denied), denied[:min(len(denied), 10)])
		}
	})
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
