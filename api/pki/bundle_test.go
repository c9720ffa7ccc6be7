package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Init with ExistingCA (a second control-plane server, given the first
// one's CAs) keeps both CAs and the service-account pair and issues its
// own certificates, for its own addresses, that verify against them.
func TestInitExistingCA(t *testing.T) {
	first := t.TempDir()
	if err := Init(InitOptions{Dir: first, ServerIPs: []net.IP{net.ParseIP("10.0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	second := t.TempDir()
	for _, f := range []string{"ca.crt", "ca.key", EtcdCACert, EtcdCAKey, ServiceAccountKey, ServiceAccountPubKey} {
		b, err := os.ReadFile(filepath.Join(first, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(filepath.Join(second, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := InitOptions{Dir: second, ExistingCA: true, ServerIPs: []net.IP{net.ParseIP("10.0.0.2")}, EtcdIPs: []net.IP{net.ParseIP("10.0.0.2")}}
	if err := Init(o); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key", EtcdCACert, EtcdCAKey, ServiceAccountKey, ServiceAccountPubKey} {
		a, _ := os.ReadFile(filepath.Join(first, f))
		b, _ := os.ReadFile(filepath.Join(second, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s changed", f)
		}
	}
	verify := func(caFile, certFile string, usage x509.ExtKeyUsage, ip string) {
		t.Helper()
		caPEM, _ := os.ReadFile(filepath.Join(first, caFile))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		b, err := os.ReadFile(filepath.Join(second, certFile))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseCertPEM(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("%s does not verify against the first server's %s: %v", certFile, caFile, err)
		}
		if ip != "" && !slices.ContainsFunc(c.IPAddresses, func(a net.IP) bool { return a.Equal(net.ParseIP(ip)) }) {
			t.Errorf("%s: IP SANs %v, want %s in them", certFile, c.IPAddresses, ip)
		}
		if ip != "" && slices.ContainsFunc(c.IPAddresses, func(a net.IP) bool { return a.Equal(net.ParseIP("10.0.0.1")) }) {
			t.Errorf("%s: IP SANs %v hold the first server's address", certFile, c.IPAddresses)
		}
	}
	verify("ca.crt", "apiserver.crt", x509.ExtKeyUsageServerAuth, "10.0.0.2")
	verify("ca.crt", "admin.crt", x509.ExtKeyUsageClientAuth, "")
	verify(EtcdCACert, EtcdServerCert, x509.ExtKeyUsageServerAuth, "10.0.0.2")
	verify(EtcdCACert, EtcdPeerCert, x509.ExtKeyUsageClientAuth, "10.0.0.2")
	verify(EtcdCACert, EtcdClientCert, x509.ExtKeyUsageClientAuth, "")

	// Without the CAs there is nothing to sign with: the error names the folder.
	err := Init(InitOptions{Dir: t.TempDir(), ExistingCA: true})
	if err == nil || !strings.Contains(err.Error(), "existing CA") {
		t.Errorf("Init(ExistingCA) on an empty folder = %v, want an error about the existing CA", err)
	}
}
