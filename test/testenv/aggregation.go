package testenv

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FrontProxyClientName is the common name of the aggregator's client
// certificate, as kube-apiserver sends it to aggregated servers.
const FrontProxyClientName = "front-proxy-client"

// WithAggregation turns on kube-apiserver's aggregation layer, which envtest
// leaves off: a front-proxy CA, the aggregator's client certificate, and the
// request-header flags that aggregated servers read from
// kube-system/extension-apiserver-authentication.
func WithAggregation(t testing.TB) Option {
	flags, err := AggregationFlags(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return func(e *envtest.Environment) { SetFlags(e, flags) }
}

// WithFlags sets kube-apiserver flags, such as "request-timeout".
func WithFlags(flags map[string]string) Option {
	return func(e *envtest.Environment) { SetFlags(e, flags) }
}

// SetFlags sets kube-apiserver flags of an environment before it starts.
func SetFlags(e *envtest.Environment, flags map[string]string) {
	args := e.ControlPlane.GetAPIServer().Configure()
	for k, v := range flags {
		args.Set(k, v)
	}
}

// AggregationFlags writes the front-proxy certificates into dir and returns
// the kube-apiserver flags that use them.
func AggregationFlags(dir string) (map[string]string, error) {
	caCert, caKey, err := writeCA(dir)
	if err != nil {
		return nil, err
	}
	if err := writeClientCert(dir, caCert, caKey, FrontProxyClientName); err != nil {
		return nil, err
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(dir, "ca.crt"),
		"requestheader-allowed-names":        FrontProxyClientName,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             filepath.Join(dir, FrontProxyClientName+".crt"),
		"proxy-client-key-file":              filepath.Join(dir, FrontProxyClientName+".key"),
	}, nil
}

func writeCA(dir string) (*x509.Certificate, *rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", der); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func writeClientCert(dir string, ca *x509.Certificate, caKey *rsa.PrivateKey, name string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
