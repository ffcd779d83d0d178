package controllers_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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
			ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: name, Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: name}},
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

// recordingServer is a TLS server of the Cluster's author's choosing: it
// records the Authorization header of every request and answers 503, its
// body far over what a condition message may hold and ending in bodyMarker.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

const bodyMarker = "an-internal-service-answers-this"

func startRecordingServer(t *testing.T) *recordingServer {
	rs := &recordingServer{}
	rs.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.auth = append(rs.auth, r.Header.Get("Authorization"))
		rs.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, strings.Repeat("x", 40<<10)+bodyMarker)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *recordingServer) authorizations() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.auth)
}

// caData is the PEM of the server's certificate, its own CA.
func (rs *recordingServer) caData() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rs.Certificate().Raw})
}

// TestClusterCredentialsBound checks that a Cluster gets only the
// credentials a Secret binds it to: a Cluster naming any other Secret of
// Panorama's namespace (the chart's DSN, serving key, Helm's release,
// another Cluster's token or kubeconfig) is refused, saying why, before the
// controller sends anything; a token goes only to the server its Secret
// names. And that what the server answers stays out of the status.
func TestClusterCredentialsBound(t *testing.T) {
	host := testenv.Start(t)
	server := startRecordingServer(t)
	hc := hostClient(t, host)
	stop := startManager(t, host, storagetest.Backends()[0].Open(t))
	defer stop()

	const dsn = "postgres://panorama:the-database-password@db:5432/panorama"
	bound := func(clusters, server string) map[string]string {
		return map[string]string{clusterv1alpha1.AnnotationCredentialClusters: clusters, clusterv1alpha1.AnnotationCredentialServer: server}
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["m"] = &clientcmdapi.Cluster{Server: server.URL, CertificateAuthorityData: server.caData()}
	kubeconfig.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "east-kubeconfig-token"}
	kubeconfig.Contexts["c"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "u"}
	kubeconfig.CurrentContext = "c"
	kubeconfigData, err := clientcmd.Write(*kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "panorama-dsn"}, Data: map[string][]byte{"dsn": []byte(dsn)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "panorama-apiserver-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("the-serving-key")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.panorama.v1"}, Type: "helm.sh/release.v1",
			Data: map[string][]byte{"release": []byte("the-helm-release")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "moved-token", Annotations: bound("moved", "https://moved.example:6443")},
			Data: map[string][]byte{"token": []byte("the-moved-token")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "west-token", Annotations: bound("west", server.URL+"/")},
			Data: map[string][]byte{"token": []byte("the-west-token")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "east", Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: "east"}},
			Data: map[string][]byte{"kubeconfig": kubeconfigData}},
	} {
		s.Namespace = controllerNamespace
		mustCreate(t, hc, s)
	}
	token := func(secret, key string) clusterv1alpha1.ClusterSpec {
		return clusterv1alpha1.ClusterSpec{
			APIServer: server.URL, CAData: server.caData(),
			TokenSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: secret, Key: key},
			SyncResources:  []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
		}
	}
	kubeconfigOf := func(secret string) clusterv1alpha1.ClusterSpec {
		return clusterv1alpha1.ClusterSpec{
			KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: secret},
			SyncResources:       []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
		}
	}
	refused := map[string]clusterv1alpha1.ClusterSpec{
		"thief":      token("panorama-dsn", "dsn"),
		"thief-tls":  token("panorama-apiserver-tls", "tls.key"),
		"thief-helm": token("sh.helm.release.v1.panorama.v1", "release"),
		"moved":      token("moved-token", ""), // bound, to another server
		"other":      kubeconfigOf("east"),     // east's kubeconfig
	}
	used := map[string]clusterv1alpha1.ClusterSpec{"east": kubeconfigOf("east"), "west": token("west-token", "")}
	for name, spec := range refused {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	}
	for name, spec := range used {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	}

	// Nothing but the bound credentials ever reaches the server.
	leaked := []string{dsn, "the-serving-key", "the-helm-release", "the-moved-token"}
	noLeak := func() {
		t.Helper()
		for _, a := range server.authorizations() {
			for _, l := range leaked {
				if strings.Contains(a, l) {
					t.Fatalf("the server got %q", a)
				}
			}
		}
	}
	for name := range refused {
		c := waitCluster(t, hc, name, func(c *clusterv1alpha1.Cluster) error {
			noLeak()
			cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != controllers.ReasonSecretNotBound {
				return fmt.Errorf("ready condition %+v, want False %s", cond, controllers.ReasonSecretNotBound)
			}
			return nil
		})
		if msg := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady).Message; !strings.Contains(msg, "not bound to this Cluster") && !strings.Contains(msg, "holds no token for") {
			t.Errorf("%s: Ready says %q", name, msg)
		}
	}
	// The bound credentials reach the server, whose answer the status
	// describes by its code alone.
	for name := range used {
		waitCluster(t, hc, name, func(c *clusterv1alpha1.Cluster) error {
			cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady)
			if cond == nil || cond.Reason != controllers.ReasonUnhealthy {
				return fmt.Errorf("ready condition %+v, want False %s", cond, controllers.ReasonUnhealthy)
			}
			if strings.Contains(cond.Message, bodyMarker) || strings.Contains(cond.Message, "xxx") || !strings.Contains(cond.Message, "503") {
				return fmt.Errorf("ready condition message %q: want the status code, not the body", cond.Message)
			}
			return nil
		})
	}
	auth := server.authorizations()
	for _, want := range []string{"Bearer east-kubeconfig-token", "Bearer the-west-token"} {
		if !slices.Contains(auth, want) {
			t.Errorf("the server never got %q: %q", want, auth)
		}
	}
	noLeak()
}
