package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver/storage"
)

func TestParseBundle(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"scheduler=/b/s", []string{"ca.crt", "scheduler.crt", "scheduler.key"}, ""},
		{"node/w1=/b/w1", []string{"ca.crt", "node-w1.crt", "node-w1.key", "proxy.crt", "proxy.key"}, ""},
		{"etcd=/b/e", []string{"etcd/ca.crt", "etcd/server.crt", "etcd/server.key", "etcd/peer.crt", "etcd/peer.key"}, ""},
		{"node/=/b/x", nil, "node/NAME"},
		{"admin=/b/a", nil, "role \"admin\""},
		{"scheduler=relative", nil, "absolute"},
		{"scheduler", nil, "ROLE="},
	} {
		b, err := parseBundle(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseBundle(%q) err = %v, want it to mention %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseBundle(%q): %v", tc.in, err)
			continue
		}
		if files, _ := b.files(); !slices.Equal(files, tc.want) {
			t.Errorf("parseBundle(%q) files = %q, want %q", tc.in, files, tc.want)
		}
	}
}

func TestPKIConfigValidateNodeBundles(t *testing.T) {
	c := pkiConfig{InitOptions: pki.InitOptions{Dir: "/pki", Nodes: []string{"w1"}}, Bundles: []bundle{{Role: "node/w2", Dir: "/b"}}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `"w2" is not in --nodes`) {
		t.Errorf("err = %v, want the missing node named", err)
	}
}

// TestEnsurePKI: the first start makes everything; a later start keeps the
// CA and every certificate, issues only a new node's, and refreshes the
// bundles; the bundles hold exactly their role's files.
func TestEnsurePKI(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	c := pkiConfig{
		InitOptions:   pki.InitOptions{Dir: dir, ServerNames: []string{"apiserver"}, Nodes: []string{"w1"}},
		EncryptionKey: "encryption.key",
		Bundles: []bundle{
			{Role: "scheduler", Dir: filepath.Join(out, "scheduler")},
			{Role: "node/w1", Dir: filepath.Join(out, "w1")},
		},
	}
	made, err := ensurePKI(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 2 {
		t.Errorf("made %q, want the CA bundle and the encryption key", made)
	}
	ca1 := read(t, dir, "ca.crt")
	w1 := read(t, dir, "node-w1.crt")
	if _, err := storage.LoadEncryption(filepath.Join(dir, "encryption.key"), "secrets"); err != nil {
		t.Errorf("encryption key not loadable by the apiserver: %v", err)
	}
	assertFiles(t, filepath.Join(out, "scheduler"), "ca.crt", "scheduler.crt", "scheduler.key")
	assertFiles(t, filepath.Join(out, "w1"), "ca.crt", "node-w1.crt", "node-w1.key", "proxy.crt", "proxy.key")
	if fi, err := os.Stat(filepath.Join(out, "w1", "node-w1.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("bundled key mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	// Second start, one more node.
	c.Nodes = append(c.Nodes, "w2")
	c.Bundles = append(c.Bundles, bundle{Role: "node/w2", Dir: filepath.Join(out, "w2")})
	made, err = ensurePKI(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(made, []string{"node-w2.crt"}) {
		t.Errorf("second start made %q, want only node-w2.crt", made)
	}
	if !bytes.Equal(read(t, dir, "ca.crt"), ca1) || !bytes.Equal(read(t, dir, "node-w1.crt"), w1) {
		t.Error("second start replaced the CA or an existing certificate")
	}
	crt, err := pki.ParseCertPEM(read(t, out+"/w2", "node-w2.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if crt.Subject.CommonName != pki.NodeUserPrefix+"w2" || !slices.Equal(crt.Subject.Organization, []string{pki.GroupNodes}) {
		t.Errorf("node-w2 subject = %v, want CN system:node:w2 O system:nodes", crt.Subject)
	}
	caCert, err := pki.ParseCertPEM(ca1)
	if err != nil {
		t.Fatal(err)
	}
	if err := crt.CheckSignatureFrom(caCert); err != nil {
		t.Errorf("node-w2 not signed by the existing CA: %v", err)
	}
	if made, err := ensurePKI(c); err != nil || len(made) != 0 {
		t.Errorf("third start made %q (err %v), want nothing", made, err)
	}
}

// TestEnsurePKIEtcd: etcd's bundle holds the etcd CA and etcd's own pairs,
// signed by the etcd CA and not the cluster CA; a volume made before etcd
// had TLS gets the etcd certificates on the next start, nothing else.
func TestEnsurePKIEtcd(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	c := pkiConfig{InitOptions: pki.InitOptions{Dir: dir}, Bundles: []bundle{{Role: "etcd", Dir: filepath.Join(out, "etcd")}}}
	if _, err := ensurePKI(c); err != nil {
		t.Fatal(err)
	}
	assertFiles(t, filepath.Join(out, "etcd"), "ca.crt", "server.crt", "server.key", "peer.crt", "peer.key")
	etcdCA, err := pki.ParseCertPEM(read(t, filepath.Join(out, "etcd"), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	clusterCA, _ := pki.ParseCertPEM(read(t, dir, "ca.crt"))
	for _, f := range []string{"server.crt", "peer.crt"} {
		crt, err := pki.ParseCertPEM(read(t, filepath.Join(out, "etcd"), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := crt.CheckSignatureFrom(etcdCA); err != nil {
			t.Errorf("%s not signed by the etcd CA: %v", f, err)
		}
		if crt.CheckSignatureFrom(clusterCA) == nil {
			t.Errorf("%s signed by the cluster CA", f)
		}
		if !slices.Contains(crt.DNSNames, "etcd") {
			t.Errorf("%s names %v, want etcd among them", f, crt.DNSNames)
		}
	}
	// An older volume: no etcd folder.
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	ca := read(t, dir, "ca.crt")
	made, err := ensurePKI(c)
	if err != nil || !slices.Equal(made, []string{"the etcd CA and certificates"}) {
		t.Errorf("made %q (%v), want only the etcd certificates", made, err)
	}
	if !bytes.Equal(read(t, dir, "ca.crt"), ca) {
		t.Error("the cluster CA was replaced")
	}
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want exactly %q", dir, got, want)
	}
}
