package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// Member client rates: one member serves many synchronizers' lists at once.
const (
	memberQPS   = 100
	memberBurst = 200
)

// memberCheckTimeout bounds each request of a member's check: health,
// version, discovery, CRDs and OpenAPI documents, which over a slow link
// may take a while, but not for ever.
const memberCheckTimeout = time.Minute

// refusedError is a Cluster whose credentials the controller will not use;
// Reason goes into the Ready condition.
type refusedError struct {
	Reason, Message string
}

func (e *refusedError) Error() string { return e.Message }

// Cluster API's kubeconfig Secrets: their type, the label naming their
// cluster, and the key of the kubeconfig.
const (
	clusterAPISecretType  = corev1.SecretType("cluster.x-k8s.io/secret")
	clusterAPIClusterName = "cluster.x-k8s.io/cluster-name"
	clusterAPIKubeconfig  = "value"
)

// SecretAccess says which Secrets of the host may hold member credentials.
type SecretAccess struct {
	// Namespace is the controller's own: a Secret there is the credential
	// of the Clusters it names itself (clusterv1alpha1.CredentialBindsCluster)
	// and, holding a token, only for the server it names.
	Namespace string
	// ClusterAPINamespaces hold Cluster API kubeconfig Secrets (and only
	// those may be named there, as a kubeconfig), usable by any Cluster:
	// the server is the one Cluster API wrote into the Secret with the
	// credentials, so no Cluster can send them elsewhere.
	ClusterAPINamespaces []string
}

// check refuses a reference before any Secret is read, so a refused Cluster
// costs no request.
func (a SecretAccess) check(ref *clusterv1alpha1.SecretKeyRef, kubeconfig bool) error {
	switch {
	case ref == nil || ref.Namespace == a.Namespace:
		return nil
	case kubeconfig && slices.Contains(a.ClusterAPINamespaces, ref.Namespace):
		if ref.Key != clusterAPIKubeconfig || !strings.HasSuffix(ref.Name, "-kubeconfig") {
			return &refusedError{ReasonSecretNamespaceForbidden, fmt.Sprintf(
				"secret %s/%s: in namespace %q only Cluster API kubeconfig Secrets (<cluster>-kubeconfig, key %q) may be named", ref.Namespace, ref.Name, ref.Namespace, clusterAPIKubeconfig)}
		}
		return nil
	}
	return &refusedError{ReasonSecretNamespaceForbidden, fmt.Sprintf(
		"secret %s/%s: only Secrets in namespace %q (and Cluster API kubeconfigs in namespaces granted by --cluster-api-secret-namespaces) may hold member credentials", ref.Namespace, ref.Name, a.Namespace)}
}

// memberConfig builds the client config of a member from its Cluster spec
// and the Secrets it names, which access must allow. The returned identity
// changes whenever anything that reaches the member changes, so that
// synchronizers reconnect.
func memberConfig(ctx context.Context, reader client.Reader, access SecretAccess, c *clusterv1alpha1.Cluster) (*rest.Config, string, error) {
	for _, err := range []error{access.check(c.Spec.KubeconfigSecretRef, true), access.check(c.Spec.TokenSecretRef, false)} {
		if err != nil {
			return nil, "", err
		}
	}
	var cfg *rest.Config
	// pinnedBy names the Secret whose CA the member's certificate must
	// chain to, when the credentials bring one.
	var pinnedBy string
	if ref := c.Spec.KubeconfigSecretRef; ref != nil {
		s, data, err := access.credential(ctx, reader, c, ref, true)
		if err != nil {
			return nil, "", err
		}
		if cfg, err = kubeconfigRESTConfig(data); err != nil {
			return nil, "", fmt.Errorf("kubeconfig in secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		if len(cfg.CAData) > 0 {
			pinnedBy = s.Namespace + "/" + s.Name
		}
	} else {
		cfg = &rest.Config{Host: c.Spec.APIServer, TLSClientConfig: rest.TLSClientConfig{CAData: c.Spec.CAData}}
		if ref := c.Spec.TokenSecretRef; ref != nil {
			s, token, err := access.credential(ctx, reader, c, ref, false)
			if err != nil {
				return nil, "", err
			}
			cfg.BearerToken = string(token)
			if ca := s.Data[clusterv1alpha1.CredentialCAKey]; len(ca) > 0 {
				cfg.CAData, pinnedBy = ca, s.Namespace+"/"+s.Name
			}
		}
	}
	// Only the Cluster may turn verification off, not a kubeconfig in it,
	// and not when the credentials pin the CA: whoever may edit the Cluster
	// could otherwise have them sent to whoever answers for the server.
	if c.Spec.InsecureSkipTLSVerify && pinnedBy != "" {
		return nil, "", &refusedError{ReasonSecretNotBound, fmt.Sprintf(
			"secret %s pins the member's CA: spec.insecureSkipTLSVerify may not turn its verification off", pinnedBy)}
	}
	cfg.Insecure = c.Spec.InsecureSkipTLSVerify
	if cfg.Insecure {
		cfg.CAData, cfg.CAFile = nil, ""
	}
	cfg.QPS, cfg.Burst = memberQPS, memberBurst
	cfg.UserAgent = "panorama-controller-manager/" + c.Name

	h := sha256.New()
	for _, part := range [][]byte{
		[]byte(cfg.Host), cfg.CAData, []byte(cfg.CAFile), []byte(cfg.BearerToken), []byte(cfg.BearerTokenFile),
		cfg.CertData, []byte(cfg.CertFile), cfg.KeyData, []byte(cfg.KeyFile), []byte(cfg.Username), []byte(cfg.Password),
		[]byte(fmt.Sprint(cfg.Insecure, cfg.ServerName)),
	} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return cfg, hex.EncodeToString(h.Sum(nil)), nil
}

// credential reads the Secret ref names and returns it with the value of
// its key, if cluster c may use it as its kubeconfig (or else its token).
// Nothing of a Secret is parsed, nor sent anywhere, before that is known:
// the namespace holds Secrets that are no member's credentials (the
// controller's database DSN, its serving certificate, Helm's releases).
func (a SecretAccess) credential(ctx context.Context, reader client.Reader, c *clusterv1alpha1.Cluster, ref *clusterv1alpha1.SecretKeyRef, kubeconfig bool) (*corev1.Secret, []byte, error) {
	var s corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return nil, nil, fmt.Errorf("secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if err := a.mayUse(&s, ref, c, kubeconfig); err != nil {
		return nil, nil, err
	}
	key := ref.Key
	if key == "" {
		key = "token"
		if kubeconfig {
			key = "kubeconfig"
		}
	}
	v, ok := s.Data[key]
	if !ok || len(v) == 0 {
		return nil, nil, fmt.Errorf("secret %s/%s has no key %q", ref.Namespace, ref.Name, key)
	}
	return &s, v, nil
}

// mayUse refuses Secret s to Cluster c unless s binds c. A Cluster API
// kubeconfig, wherever it is, is only ever the kubeconfig of the cluster it
// is named after; in a namespace the admin granted it needs no binding,
// since Cluster API wrote its server with its credentials. Any other
// Secret must be in the controller's namespace and name c in its
// annotations, and a token its server.
func (a SecretAccess) mayUse(s *corev1.Secret, ref *clusterv1alpha1.SecretKeyRef, c *clusterv1alpha1.Cluster, kubeconfig bool) error {
	what := s.Namespace + "/" + s.Name
	clusterAPI := s.Type == clusterAPISecretType
	switch {
	case clusterAPI && slices.Contains(a.ClusterAPINamespaces, s.Namespace):
	case s.Namespace != a.Namespace:
		return &refusedError{ReasonSecretNamespaceForbidden, fmt.Sprintf(
			"secret %s is not a Cluster API kubeconfig (type %s, label %s naming the cluster)", what, clusterAPISecretType, clusterAPIClusterName)}
	case !clusterv1alpha1.CredentialBindsCluster(s.Annotations, c.Name):
		return &refusedError{ReasonSecretNotBound, fmt.Sprintf(
			"secret %s is not bound to this Cluster: its annotation %s must name %q", what, clusterv1alpha1.AnnotationCredentialClusters, c.Name)}
	}
	if clusterAPI && (!kubeconfig || ref.Key != clusterAPIKubeconfig || s.Labels[clusterAPIClusterName]+"-kubeconfig" != s.Name) {
		return &refusedError{ReasonSecretNamespaceForbidden, fmt.Sprintf(
			"secret %s is a Cluster API Secret: it may be named only as a kubeconfig, key %q, named after the cluster its label %s names", what, clusterAPIKubeconfig, clusterAPIClusterName)}
	}
	if !kubeconfig && !clusterv1alpha1.CredentialBindsServer(s.Annotations, c.Spec.APIServer) {
		return &refusedError{ReasonSecretNotBound, fmt.Sprintf(
			"secret %s holds no token for %q: its annotation %s must name that server", what, c.Spec.APIServer, clusterv1alpha1.AnnotationCredentialServer)}
	}
	return nil
}

// kubeconfigRESTConfig is the config of a kubeconfig's current context,
// refused if any of its users or clusters would have the controller run a
// program or read a file of its own: a kubeconfig comes from whoever may
// write the Secret, and the controller's files include its own credentials.
func kubeconfigRESTConfig(data []byte) (*rest.Config, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	for name, u := range kc.AuthInfos {
		if p := localUserReference(u); p != "" {
			return nil, &refusedError{ReasonKubeconfigRefused, fmt.Sprintf("user %q uses %s, which the controller does not allow; embed the credentials instead", name, p)}
		}
	}
	for name, cl := range kc.Clusters {
		for what, path := range map[string]string{"certificate-authority": cl.CertificateAuthority, "a file location": cl.LocationOfOrigin} {
			if path != "" {
				return nil, &refusedError{ReasonKubeconfigRefused, fmt.Sprintf("cluster %q uses %s, which the controller does not allow; embed certificate-authority-data instead", name, what)}
			}
		}
	}
	return clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// localUserReference names what of u reaches outside the kubeconfig, or "".
func localUserReference(u *clientcmdapi.AuthInfo) string {
	switch {
	case u.Exec != nil:
		return "an exec plugin"
	case u.AuthProvider != nil:
		return "an auth provider"
	}
	files := map[string]string{"tokenFile": u.TokenFile, "client-certificate": u.ClientCertificate, "client-key": u.ClientKey, "a file location": u.LocationOfOrigin}
	for _, what := range slices.Sorted(maps.Keys(files)) {
		if files[what] != "" {
			return what
		}
	}
	return ""
}
