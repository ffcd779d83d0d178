package testenv

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// RenderChart renders the chart with `helm template` for release
// "panorama" in ShippedNamespace with a shared database (split mode, its
// DSN in Secret "db"), plus args, and returns the manifest.
func RenderChart(t testing.TB, args ...string) string {
	t.Helper()
	out, err := TryRenderChart(t, args...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	return out
}

// TryRenderChart is RenderChart for values the chart may refuse: it
// returns helm's output and error.
func TryRenderChart(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(filepath.Join(Assets(t), "helm"), append([]string{"template", "panorama",
		filepath.Join(RepoRoot(t), "charts", "panorama"), "--namespace", ShippedNamespace,
		"--set", "storage.driver=mysql", "--set", "storage.dsnSecret.name=db"}, args...)...).CombinedOutput()
	return string(out), err
}

// Objects decodes the objects of a YAML manifest of several documents.
func Objects(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding manifest: %v", err)
		}
		if obj != nil {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Find returns the object of a kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ChartServing is what the chart issues for the API server when there is
// no cert-manager: the serving certificate and key, written to files the
// API server is started with, and the APIService whose caBundle trusts
// them.
type ChartServing struct {
	CertFile, KeyFile string
	APIService        *unstructured.Unstructured
}

// ChartServingCert renders the chart's TLS Secret and APIService (a new CA
// at each call, as a new install) and writes the certificate and key into
// dir.
func ChartServingCert(t testing.TB, dir string) ChartServing {
	t.Helper()
	objs := Objects(t, RenderChart(t, "--show-only", "templates/apiservice.yaml"))
	secret, apiService := Find(objs, "Secret", "panorama-apiserver-tls"), Find(objs, "APIService", "v1alpha1.search.panorama.io")
	if secret == nil || apiService == nil {
		t.Fatal("the chart rendered no TLS Secret or no APIService")
	}
	s := ChartServing{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), APIService: apiService}
	for key, file := range map[string]string{"tls.crt": s.CertFile, "tls.key": s.KeyFile} {
		b64, _, _ := unstructured.NestedString(secret.Object, "data", key)
		pem, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(pem) == 0 {
			t.Fatalf("the chart's Secret has no %s: %v", key, err)
		}
		if err := os.WriteFile(file, pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// RegisterAPIService registers apiService with the host for a Panorama API
// server listening on localhost:port. The host has no Service network, so
// the APIService's Service becomes an ExternalName one for localhost and
// its port the server's; the aggregator still verifies the certificate
// for <service>.<namespace>.svc, as in a cluster.
func (e *Env) RegisterAPIService(t testing.TB, apiService *unstructured.Unstructured, port int) {
	t.Helper()
	a := apiService.DeepCopy()
	if err := unstructured.SetNestedField(a.Object, int64(port), "spec", "service", "port"); err != nil {
		t.Fatal(err)
	}
	name, _, _ := unstructured.NestedString(a.Object, "spec", "service", "name")
	namespace, _, _ := unstructured.NestedString(a.Object, "spec", "service", "namespace")
	service := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"type": "ExternalName", "externalName": "localhost", "ports": []any{map[string]any{"port": port}}},
	}
	e.Apply(t, service, a.Object)
}

// Apply applies objects to the environment with kubectl.
func (e *Env) Apply(t testing.TB, objs ...map[string]any) {
	t.Helper()
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objs})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "objects-*.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(list); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	e.Kubectl(t, "apply", "-f", f.Name())
}

// Get runs kubectl get -o json with args and returns the objects.
func (e *Env) Get(t testing.TB, args ...string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, o := range Objects(t, e.Kubectl(t, append([]string{"get", "-o", "json"}, args...)...)) {
		if !o.IsList() {
			objs = append(objs, o)
			continue
		}
		if err := o.EachListItem(func(item runtime.Object) error {
			objs = append(objs, item.(*unstructured.Unstructured))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}
