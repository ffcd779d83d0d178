package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestClusterCredentialsRefused checks that a Cluster cannot make the
// controller use a Secret outside its namespace, nor run a program or read a
// file of its own, and that it then sends nothing anywhere.
func TestClusterCredentialsRefused(t *testing.T) {
	host := testenv.Start(t)
	var requests atomic.Int64
	member := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "not a member", http.StatusTeapot)
	}))
	t.Cleanup(member.Close)
	hc := hostClient(t, host)
	ctx := context.Background()
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "host-admin"},
		Data:       map[string][]byte{"token": []byte("host-admin-token")},
	})
	mustCreate(t, hc, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "borrower"},
		Spec: clusterv1alpha1.ClusterSpec{
			APIServer:      member.URL,
			TokenSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "host-admin"},
			SyncResources:  []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
		},
	})
	stop := startManager(t, host, storagetest.Backends()[0].Open(t))

	user := map[string]string{
		"exec":               "exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'cat /var/run/secrets/kubernetes.io/serviceaccount/token']}",
		"auth-provider":      "auth-provider: {name: oidc, config: {idp-issuer-url: 'https://issuer.example'}}",
		"token-file":         "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
		"client-certificate": "client-certificate: /etc/kubernetes/pki/admin.crt\n    client-key: /etc/kubernetes/pki/admin.key",
	}
	cluster := map[string]string{"certificate-authority": "certificate-authority: /etc/kubernetes/pki/ca.crt"}
	kubeconfig := func(clusterExtra, userExtra string) []byte {
		return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: m
  cluster:
    server: %s
    %s
users:
- name: u
  user:
    %s
contexts:
- name: c
  context: {cluster: m, user: u}
current-context: c
`, member.URL, clusterExtra, userExtra)
	}
	refused := map[string][]byte{}
	for name, extra := range user {
		refused[name] = kubeconfig("insecure-skip-tls-verify: true", extra)
	}
	for name, extra := range cluster {
		refused[name] = kubeconfig(extra, "token: t")
	}
	for name, kc := range refused {
		mustCreate(t, hc, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: name},
			Data:       map[string][]byte{"kubeconfig": kc},
		})
		mustCreate(t, hc, &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{
				KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: name},
				SyncResources:       []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
			},
		})
	}

	readyReason := func(want string) func(*clusterv1alpha1.Cluster) error {
		return func(c *clusterv1alpha1.Cluster) error {
			cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != want {
				return fmt.Errorf("ready condition %+v, want False %s", cond, want)
			}
			if !slices.Contains(c.Finalizers, controllers.Finalizer) {
				return fmt.Errorf("finalizers %v", c.Finalizers)
			}
			return nil
		}
	}
	waitCluster(t, hc, "borrower", readyReason(controllers.ReasonSecretNamespaceForbidden))
	for name := range refused {
		waitCluster(t, hc, name, readyReason(controllers.ReasonKubeconfigRefused))
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the controller sent %d requests to a member whose credentials it refused", n)
	}

	// The finalizer comes off under the shipped role too.
	if err := hc.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "borrower"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		var c clusterv1alpha1.Cluster
		if err := hc.Get(ctx, client.ObjectKey{Name: "borrower"}, &c); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster still there: %v (finalizers %v)", err, c.Finalizers)
		}
		return nil
	})
	stop()
}
