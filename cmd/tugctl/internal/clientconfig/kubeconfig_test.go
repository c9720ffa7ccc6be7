package clientconfig

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Standard kubeconfigs: --kubeconfig and a KUBECONFIG list merged as
// kubectl merges them; the gRPC address from the cluster's extension or
// the server's host; paths relative to the file that names them; inline
// certificate data.
func TestResolveKubeconfig(t *testing.T) {
	dir := t.TempDir()
	caData := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\n"))
	first := writeFile(t, dir, "first.yaml", `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: https://10.0.0.10:6444
    certificate-authority: pki/ca.crt
    extensions:
    - name: tugboat.io/grpc
      extension: {server: "10.0.0.10:7443"}
- name: bare
  cluster:
    server: https://lab.example:6444
    certificate-authority-data: `+caData+`
users:
- name: admin
  user: {client-certificate: pki/admin.crt, client-key: /abs/admin.key}
contexts:
- name: lab
  context: {cluster: lab, user: admin, namespace: web}
current-context: lab
`)
	sub := filepath.Join(dir, "sub")
	os.MkdirAll(sub, 0o755)
	second := writeFile(t, sub, "second.yaml", `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://shadowed:1"}
users:
- name: bot
  user: {tokenFile: bot.token}
- name: plugin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}
contexts:
- name: bare
  context: {cluster: bare, user: bot}
- name: plugin
  context: {cluster: lab, user: plugin}
current-context: bare
`)
	tugctlForm := writeFile(t, dir, "own.yaml", "server: own:1\n")
	list := first + string(os.PathListSeparator) + filepath.Join(dir, "missing.yaml") + string(os.PathListSeparator) + second
	for _, tc := range []struct {
		name        string
		flags       Flags
		env         map[string]string
		server      string
		from        string
		ns, ca      string
		cert, token string
		tokenFile   string
		caData      bool
		err         string
	}{
		{name: "--kubeconfig", flags: Flags{Kubeconfig: first}, server: "10.0.0.10:7443", from: `context "lab" in ` + first, ns: "web",
			ca: filepath.Join(dir, "pki/ca.crt"), cert: filepath.Join(dir, "pki/admin.crt")},
		{name: "KUBECONFIG: the first current-context and cluster win", env: map[string]string{"KUBECONFIG": list}, server: "10.0.0.10:7443", from: `context "lab" in ` + first, ns: "web",
			ca: filepath.Join(dir, "pki/ca.crt"), cert: filepath.Join(dir, "pki/admin.crt")},
		{name: "KUBECONFIG: a context of the second file; a path relative to it", flags: Flags{Context: "bare"}, env: map[string]string{"KUBECONFIG": list},
			server: "lab.example:6443", from: `context "bare" in ` + second + `: the host of its cluster's server https://lab.example:6444 on Tugboat's gRPC port 6443`, ns: "default",
			tokenFile: filepath.Join(sub, "bot.token"), caData: true},
		{name: "KUBECONFIG beats ~/.tugboat/config, TUGBOAT_CONFIG beats KUBECONFIG", env: map[string]string{"KUBECONFIG": list, "TUGBOAT_CONFIG": tugctlForm}, server: "own:1", from: tugctlForm, ns: "default"},
		{name: "--kubeconfig and --config", flags: Flags{Kubeconfig: first, ConfigPath: tugctlForm}, err: "--kubeconfig and --config: give one of them"},
		{name: "exec plugins", flags: Flags{Context: "plugin"}, env: map[string]string{"KUBECONFIG": list}, err: `user "plugin": exec credential plugins are not supported by tugctl`},
		{name: "unknown context", flags: Flags{Kubeconfig: first, Context: "nope"}, err: `--context "nope": no such context in ` + first + ` (have: lab)`},
		{name: "a KUBECONFIG file in tugctl's form", env: map[string]string{"KUBECONFIG": tugctlForm}, err: "not a kubeconfig"},
		{name: "a missing --kubeconfig", flags: Flags{Kubeconfig: filepath.Join(dir, "none")}, err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			s, err := Resolve(tc.flags, func(k string) string { return env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Server != tc.server || !strings.HasPrefix(s.ServerFrom, tc.from) || s.Namespace != tc.ns || s.CAFile != tc.ca || s.CertFile != tc.cert ||
				s.TokenFile != tc.tokenFile || (len(s.CAData) > 0) != tc.caData {
				t.Errorf("settings = %+v", s)
			}
			if tc.server != "own:1" && !s.TLS {
				t.Errorf("an https kubeconfig server without TLS: %+v", s)
			}
		})
	}
}

// With no file named, ~/.kube/config is read when ~/.tugboat/config is
// missing.
func TestDefaultKubeconfig(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".kube"), 0o755)
	writeFile(t, filepath.Join(home, ".kube"), "config", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://k:6444\"}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n")
	s, err := Resolve(Flags{}, func(k string) string { return map[string]string{"HOME": home}[k] })
	if err != nil || s.Server != "k:6443" {
		t.Fatalf("settings %+v, %v", s, err)
	}
	os.MkdirAll(filepath.Join(home, ".tugboat"), 0o755)
	writeFile(t, filepath.Join(home, ".tugboat"), "config", "server: own:1\n")
	if s, err := Resolve(Flags{}, func(k string) string { return map[string]string{"HOME": home}[k] }); err != nil || s.Server != "own:1" {
		t.Fatalf("with ~/.tugboat/config: %+v, %v", s, err)
	}
}
