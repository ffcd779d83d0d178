package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// Member client rates: one member serves many synchronizers' lists at once.
const (
	memberQPS   = 100
	memberBurst = 200
)

// memberConfig builds the client config of a member from its Cluster spec
// and the Secrets it names. The returned identity changes whenever anything
// that reaches the member changes, so that synchronizers reconnect.
func memberConfig(ctx context.Context, reader client.Reader, c *clusterv1alpha1.Cluster) (*rest.Config, string, error) {
	var cfg *rest.Config
	if ref := c.Spec.KubeconfigSecretRef; ref != nil {
		data, err := secretValue(ctx, reader, ref, "kubeconfig")
		if err != nil {
			return nil, "", err
		}
		if cfg, err = clientcmd.RESTConfigFromKubeConfig(data); err != nil {
			return nil, "", fmt.Errorf("kubeconfig in secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
	} else {
		cfg = &rest.Config{
			Host: c.Spec.APIServer,
			TLSClientConfig: rest.TLSClientConfig{
				CAData:   c.Spec.CAData,
				Insecure: c.Spec.InsecureSkipTLSVerify,
			},
		}
		if ref := c.Spec.TokenSecretRef; ref != nil {
			token, err := secretValue(ctx, reader, ref, "token")
			if err != nil {
				return nil, "", err
			}
			cfg.BearerToken = string(token)
		}
	}
	if c.Spec.InsecureSkipTLSVerify {
		cfg.Insecure, cfg.CAData, cfg.CAFile = true, nil, ""
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

func secretValue(ctx context.Context, reader client.Reader, ref *clusterv1alpha1.SecretKeyRef, defaultKey string) ([]byte, error) {
	var s corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	key := ref.Key
	if key == "" {
		key = defaultKey
	}
	v, ok := s.Data[key]
	if !ok || len(v) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no key %q", ref.Namespace, ref.Name, key)
	}
	return v, nil
}
