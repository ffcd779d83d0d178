package importer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// sourceKind is an inventory kind: its group and kind, and the versions
// read (none: the preferred one, for what is read is only metadata).
type sourceKind struct {
	schema.GroupKind
	versions []string
}

var sourceKinds = map[clusterv1alpha1.ImportSource]sourceKind{
	// status.accessProviders is read, whose shape is v1alpha1's.
	clusterv1alpha1.ImportSourceClusterProfile: {schema.GroupKind{Group: "multicluster.x-k8s.io", Kind: "ClusterProfile"}, []string{"v1alpha1"}},
	clusterv1alpha1.ImportSourceClusterAPI:     {schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, nil},
}

// Cluster API writes each cluster's admin kubeconfig into the Secret
// <name>-kubeconfig of the cluster's namespace, under this key.
const (
	clusterAPIKubeconfigSuffix = "-kubeconfig"
	clusterAPIKubeconfigKey    = "value"
)

// defaultTokenKey is the key of a ClusterProfile's bearer token.
const defaultTokenKey = "token"

// sourceRecord is the value of AnnotationImportSource for a source.
func sourceRecord(kind sourceKind, src *unstructured.Unstructured) string {
	return kind.GroupKind.String() + "/" + src.GetNamespace() + "/" + src.GetName()
}

// clusterName is the name of the Cluster imported from namespace/name: a
// DNS subdomain (253 characters at most) under the scheme NamespaceName,
// whose longer names are cut and end in a hash of the source's key so they
// stay apart. Two sources can still map to one name ("a-b"/"c" and
// "a"/"b-c"): the import reports that as a conflict.
func clusterName(scheme clusterv1alpha1.NameScheme, namespace, name string) string {
	if scheme == clusterv1alpha1.NameSchemeName {
		return name
	}
	n := namespace + "-" + name
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return strings.TrimRight(n[:validation.DNS1123SubdomainMaxLength-len(suffix)], "-.") + suffix
}

// notImportedError is a selected source the policy cannot make a Cluster of
// (yet); its Cluster, if any, is kept as it is.
type notImportedError struct{ msg string }

func (e *notImportedError) Error() string { return e.msg }

func notImported(format string, args ...any) error {
	return &notImportedError{fmt.Sprintf(format, args...)}
}

// clusterSpec is the spec of the Cluster imported from src under p.
func (r *Reconciler) clusterSpec(ctx context.Context, p *clusterv1alpha1.ClusterImportPolicy, src *unstructured.Unstructured, name string) (clusterv1alpha1.ClusterSpec, error) {
	t := p.Spec.Template
	spec := clusterv1alpha1.ClusterSpec{
		SyncResources: t.SyncResources, SyncAllCustomResources: t.SyncAllCustomResources, SyncResourcesRef: t.SyncResourcesRef,
		SecretData: t.SecretData, EventRetention: t.EventRetention, InsecureSkipTLSVerify: t.InsecureSkipTLSVerify, Paused: t.Paused,
	}
	if spec.SecretData == "" {
		spec.SecretData = clusterv1alpha1.SecretDataDrop // as the Cluster CRD defaults it, so updates compare equal
	}
	switch p.Spec.Source {
	case clusterv1alpha1.ImportSourceClusterAPI:
		spec.KubeconfigSecretRef = &clusterv1alpha1.SecretKeyRef{
			Namespace: src.GetNamespace(), Name: src.GetName() + clusterAPIKubeconfigSuffix, Key: clusterAPIKubeconfigKey,
		}
	case clusterv1alpha1.ImportSourceClusterProfile:
		server, ca, err := accessProvider(src, p.Spec.ClusterProfile.AccessProvider)
		if err != nil {
			return spec, err
		}
		if err := r.credentialBound(ctx, name, server); err != nil {
			return spec, err
		}
		spec.APIServer, spec.CAData = server, ca
		key := p.Spec.ClusterProfile.TokenKey
		if key == "" {
			key = defaultTokenKey
		}
		spec.TokenSecretRef = &clusterv1alpha1.SecretKeyRef{Namespace: r.SecretNamespace, Name: name, Key: key}
	}
	return spec, nil
}

// accessProvider is the server and CA of the profile's access provider
// named provider: from status.accessProviders, else from the deprecated
// status.credentialProviders (as upstream prefers them).
func accessProvider(profile *unstructured.Unstructured, provider string) (string, []byte, error) {
	for _, field := range []string{"accessProviders", "credentialProviders"} {
		list, _, err := unstructured.NestedSlice(profile.Object, "status", field)
		if err != nil {
			return "", nil, notImported("status.%s: %v", field, err)
		}
		for _, item := range list {
			entry, ok := item.(map[string]any)
			if !ok || entry["name"] != provider {
				continue
			}
			server, _, _ := unstructured.NestedString(entry, "cluster", "server")
			if !strings.HasPrefix(server, "https://") && !strings.HasPrefix(server, "http://") {
				return "", nil, notImported("access provider %q has no server URL (%q)", provider, server)
			}
			caText, _, _ := unstructured.NestedString(entry, "cluster", "certificate-authority-data")
			ca, err := base64.StdEncoding.DecodeString(caText)
			if err != nil {
				return "", nil, notImported("access provider %q: certificate-authority-data: %v", provider, err)
			}
			return server, ca, nil
		}
	}
	return "", nil, notImported("no access provider %q in status.accessProviders or status.credentialProviders", provider)
}

// credentialBound checks that the Secret named name in the controller's
// namespace holds a token for the imported Cluster at the profile's
// server, bound as every token Secret (clusterv1alpha1.CredentialBindsCluster,
// CredentialBindsServer): whoever writes a profile's status chooses the
// server, and a profile of another namespace may map to the same Cluster
// name, so the Secret's writer, not the profile, says where its token goes.
// The cluster controller checks the same before using it: here it keeps a
// profile the Secret does not bind from being imported, or its Cluster from
// following it to another server, with the policy saying why.
func (r *Reconciler) credentialBound(ctx context.Context, name, server string) error {
	var s corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.SecretNamespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return notImported("no Secret %s/%s holds its token (annotated %s: %s and %s: %s)", r.SecretNamespace, name,
			clusterv1alpha1.AnnotationCredentialClusters, name, clusterv1alpha1.AnnotationCredentialServer, server)
	case err != nil:
		return err
	case !clusterv1alpha1.CredentialBindsCluster(s.Annotations, name):
		return notImported("Secret %s/%s is not bound to the Cluster: its annotation %s must name %s", r.SecretNamespace, name, clusterv1alpha1.AnnotationCredentialClusters, name)
	case !clusterv1alpha1.CredentialBindsServer(s.Annotations, server):
		return notImported("Secret %s/%s holds no token for %s: its annotation %s must name that server", r.SecretNamespace, name, server, clusterv1alpha1.AnnotationCredentialServer)
	}
	return nil
}
