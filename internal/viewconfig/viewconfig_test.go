package viewconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// TestFromKubeconfigKeepsTheUser checks that the views take the chosen
// context's server, CA and user entry as written (an exec plugin stays an
// exec plugin), with relative file paths made absolute, and that merging
// them keeps the other entries.
func TestFromKubeconfigKeepsTheUser(t *testing.T) {
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://prod.example.com:6443/", CertificateAuthority: "ca.pem", TLSServerName: "kube.prod"}
	kc.Clusters["dev"] = &clientcmdapi.Cluster{Server: "https://dev.example.com"}
	kc.AuthInfos["me"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "sso-login", Args: []string{"--team", "a"}, InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}}
	kc.AuthInfos["dev"] = &clientcmdapi.AuthInfo{Token: "dev-token"}
	kc.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "me"}
	kc.Contexts["dev"] = &clientcmdapi.Context{Cluster: "dev", AuthInfo: "dev"}
	kc.CurrentContext = "dev"
	path := filepath.Join(dir, "config")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("unused"), 0o600); err != nil {
		t.Fatal(err)
	}

	views, _, err := FromKubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, "prod")
	if err != nil {
		t.Fatal(err)
	}
	views.User, views.All, views.Flat, views.Prefix, views.Clusters = "panorama", "panorama", "panorama-flat", "panorama-", []string{"flat", "west"}
	if _, err := views.AddTo(kc); err == nil || kc.Contexts["panorama-west"] != nil {
		t.Fatal("a cluster named flat took the flat view's context, or half the views were added")
	}
	views.Clusters = []string{"east", "west"}
	names, err := views.AddTo(kc)
	if want := []string{"panorama", "panorama-flat", "panorama-east", "panorama-west"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("contexts %v, want %v (%v)", names, want, err)
	}
	for name, cluster := range map[string]string{"panorama": "", "panorama-west": "west", "panorama-flat": searchv1alpha1.FlatClusters} {
		c := kc.Clusters[name]
		if want := "https://prod.example.com:6443" + searchv1alpha1.ViewPath(cluster); c.Server != want {
			t.Errorf("%s: server %q, want %q", name, c.Server, want)
		}
		if c.CertificateAuthority != filepath.Join(dir, "ca.pem") || c.TLSServerName != "kube.prod" {
			t.Errorf("%s: CA %q, TLS server name %q: not the host's", name, c.CertificateAuthority, c.TLSServerName)
		}
		if kc.Contexts[name].AuthInfo != "panorama" {
			t.Errorf("%s: user %q", name, kc.Contexts[name].AuthInfo)
		}
	}
	if u := kc.AuthInfos["panorama"]; u.Exec == nil || u.Exec.Command != "sso-login" || len(u.Exec.Args) != 2 || u.Token != "" {
		t.Errorf("user not kept as written: %+v", u)
	}
	if kc.AuthInfos["dev"].Token != "dev-token" || kc.Contexts["dev"] == nil || kc.CurrentContext != "dev" {
		t.Error("merging changed the other entries")
	}
	if _, _, err := FromKubeconfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, "nope"); err == nil {
		t.Error("an unknown context was accepted")
	}
}
