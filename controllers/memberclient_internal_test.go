package controllers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

const (
	testNamespace = "panorama-system"
	testCAPI      = "capi-east"
	testServer    = "https://east.example:6443"
)

// testKubeconfig is a kubeconfig of server, with a CA when ca is set.
func testKubeconfig(server string, ca bool) []byte {
	caLine := ""
	if ca {
		caLine = "\n    certificate-authority-data: " + "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: m
  cluster:
    server: %s%s
users:
- name: u
  user: {token: kubeconfig-token}
contexts:
- name: c
  context: {cluster: m, user: u}
current-context: c
`, server, caLine)
}

func bound(clusters, server string) map[string]string {
	a := map[string]string{clusterv1alpha1.AnnotationCredentialClusters: clusters}
	if server != "" {
		a[clusterv1alpha1.AnnotationCredentialServer] = server
	}
	return a
}

// TestMemberCredentialBinding checks which Secrets a Cluster may use, and
// how: only those that bind it, a token only for the server the Secret
// names, a Cluster API kubeconfig only as itself.
func TestMemberCredentialBinding(t *testing.T) {
	secrets := []corev1.Secret{
		// What the chart and Helm keep in Panorama's namespace.
		{ObjectMeta: metav1.ObjectMeta{Name: "panorama-dsn"}, Data: map[string][]byte{"dsn": []byte("postgres://panorama:pw@db/panorama")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "panorama-apiserver-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"ca.crt": []byte("ca"), "tls.crt": []byte("crt"), "tls.key": []byte("serving-key")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.panorama.v1"}, Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("H4sI...")}},
		// Member credentials, bound.
		{ObjectMeta: metav1.ObjectMeta{Name: "east-token", Annotations: bound("east", testServer+"/")},
			Data: map[string][]byte{"token": []byte("east-token")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "east-token-ca", Annotations: bound("east", testServer)},
			Data: map[string][]byte{"token": []byte("east-token"), "ca.crt": []byte("the member's CA")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "east-kubeconfig", Annotations: bound("west, east", "")},
			Data: map[string][]byte{"kubeconfig": testKubeconfig(testServer, false)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "east-kubeconfig-ca", Annotations: bound("east", "")},
			Data: map[string][]byte{"kubeconfig": testKubeconfig(testServer, true)}},
		// Cluster API kubeconfigs: in a granted namespace, unbound; in
		// Panorama's, bound but not Cluster API's shape.
		{ObjectMeta: metav1.ObjectMeta{Namespace: testCAPI, Name: "shop-kubeconfig", Labels: map[string]string{clusterAPIClusterName: "shop"}},
			Type: clusterAPISecretType, Data: map[string][]byte{"value": testKubeconfig(testServer, false)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: testCAPI, Name: "cloud-kubeconfig"}, Data: map[string][]byte{"value": testKubeconfig(testServer, false)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-kubeconfig", Labels: map[string]string{clusterAPIClusterName: "shop"}, Annotations: bound("east", testServer)},
			Type: clusterAPISecretType, Data: map[string][]byte{"value": testKubeconfig(testServer, false), "token": []byte("t")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shop-kubeconfig", Labels: map[string]string{clusterAPIClusterName: "shop"}},
			Type: clusterAPISecretType, Data: map[string][]byte{"value": testKubeconfig(testServer, false)}},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, 0, len(secrets))
	for i := range secrets {
		if secrets[i].Namespace == "" {
			secrets[i].Namespace = testNamespace
		}
		objs = append(objs, &secrets[i])
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(objs...).Build()
	access := SecretAccess{Namespace: testNamespace, ClusterAPINamespaces: []string{testCAPI}}

	token := func(name, key string) clusterv1alpha1.ClusterSpec {
		return clusterv1alpha1.ClusterSpec{APIServer: testServer, CAData: []byte("the Cluster's CA"),
			TokenSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: testNamespace, Name: name, Key: key}}
	}
	kubeconfig := func(ns, name, key string) clusterv1alpha1.ClusterSpec {
		return clusterv1alpha1.ClusterSpec{KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: ns, Name: name, Key: key}}
	}
	insecure := func(spec clusterv1alpha1.ClusterSpec) clusterv1alpha1.ClusterSpec {
		spec.InsecureSkipTLSVerify = true
		return spec
	}
	elsewhere := token("east-token", "")
	elsewhere.APIServer = "https://thief.example"

	for _, tc := range []struct {
		name, cluster string
		spec          clusterv1alpha1.ClusterSpec
		refused       string // reason, "" when used
		token, ca     string // what the config then carries
	}{
		{name: "DSN as a token", cluster: "thief", spec: token("panorama-dsn", "dsn"), refused: ReasonSecretNotBound},
		{name: "DSN as a kubeconfig", cluster: "thief", spec: kubeconfig(testNamespace, "panorama-dsn", "dsn"), refused: ReasonSecretNotBound},
		{name: "serving key", cluster: "thief", spec: token("panorama-apiserver-tls", "tls.key"), refused: ReasonSecretNotBound},
		{name: "Helm release", cluster: "thief", spec: token("sh.helm.release.v1.panorama.v1", "release"), refused: ReasonSecretNotBound},
		{name: "another Cluster's token", cluster: "thief", spec: token("east-token", ""), refused: ReasonSecretNotBound},
		{name: "another Cluster's kubeconfig", cluster: "other", spec: kubeconfig(testNamespace, "east-kubeconfig", ""), refused: ReasonSecretNotBound},
		{name: "a token for another server", cluster: "east", spec: elsewhere, refused: ReasonSecretNotBound},
		{name: "a bound kubeconfig as a token", cluster: "east", spec: token("east-kubeconfig", "kubeconfig"), refused: ReasonSecretNotBound},
		{name: "bound token", cluster: "east", spec: token("east-token", ""), token: "east-token", ca: "the Cluster's CA"},
		{name: "bound kubeconfig", cluster: "east", spec: kubeconfig(testNamespace, "east-kubeconfig", ""), token: "kubeconfig-token"},
		{name: "bound kubeconfig, the other Cluster named", cluster: "west", spec: kubeconfig(testNamespace, "east-kubeconfig", ""), token: "kubeconfig-token"},
		{name: "token pinning its CA", cluster: "east", spec: token("east-token-ca", ""), token: "east-token", ca: "the member's CA"},
		{name: "token pinning its CA, verification off", cluster: "east", spec: insecure(token("east-token-ca", "")), refused: ReasonSecretNotBound},
		{name: "kubeconfig pinning its CA, verification off", cluster: "east", spec: insecure(kubeconfig(testNamespace, "east-kubeconfig-ca", "")), refused: ReasonSecretNotBound},
		{name: "token without a CA, verification off", cluster: "east", spec: insecure(token("east-token", "")), token: "east-token"},
		{name: "Cluster API kubeconfig", cluster: "anyone", spec: kubeconfig(testCAPI, "shop-kubeconfig", "value"), token: "kubeconfig-token"},
		{name: "not a Cluster API Secret", cluster: "anyone", spec: kubeconfig(testCAPI, "cloud-kubeconfig", "value"), refused: ReasonSecretNamespaceForbidden},
		{name: "Cluster API Secret as a token", cluster: "anyone", spec: clusterv1alpha1.ClusterSpec{APIServer: testServer,
			TokenSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: testCAPI, Name: "shop-kubeconfig", Key: "value"}}, refused: ReasonSecretNamespaceForbidden},
		// In Panorama's namespace a Cluster API Secret needs the binding,
		// and is held to Cluster API's shape all the same.
		{name: "Cluster API kubeconfig here, unbound", cluster: "anyone", spec: kubeconfig(testNamespace, "shop-kubeconfig", "value"), refused: ReasonSecretNotBound},
		{name: "Cluster API Secret here, bound, as a token", cluster: "east", spec: token("web-kubeconfig", "token"), refused: ReasonSecretNamespaceForbidden},
		{name: "Cluster API Secret here, bound, of another cluster", cluster: "east", spec: kubeconfig(testNamespace, "web-kubeconfig", "value"), refused: ReasonSecretNamespaceForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: tc.cluster}, Spec: tc.spec}
			cfg, _, err := memberConfig(context.Background(), reader, access, c)
			if tc.refused != "" {
				var refused *refusedError
				if !errors.As(err, &refused) || refused.Reason != tc.refused {
					t.Fatalf("memberConfig: %v (config %+v), want refused %s", err, cfg, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BearerToken != tc.token || string(cfg.CAData) != tc.ca {
				t.Fatalf("token %q, CA %q; want %q, %q", cfg.BearerToken, cfg.CAData, tc.token, tc.ca)
			}
		})
	}
}
