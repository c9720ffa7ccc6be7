package ingress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// testCA signs serving certificates made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns PEM tls.crt and tls.key for the names, with cn as subject.
func (ca *testCA) issue(t *testing.T, cn string, names ...string) (crtPEM, keyPEM []byte) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func tlsSecret(name, typ string, crt, key []byte) *v1.Secret {
	return &v1.Secret{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name}, Type: typ,
		Data: map[string][]byte{"tls.crt": crt, "tls.key": key}}
}

// TLS with SNI from kubernetes.io/tls Secrets made in the test: each name
// gets its certificate (a wildcard one included), verified against the
// test's CA; an unknown name and a bad Secret get the default certificate
// (and the bad Secret an Event); a renewed Secret is served on the next
// handshake, without a restart.
func TestTLS(t *testing.T) {
	cl := startCluster(t)
	ca := newCA(t)
	secrets := client.For[*v1.Secret](cl.admin)
	ctx := context.Background()
	fooCrt, fooKey := ca.issue(t, "foo v1", "foo.example.com")
	barCrt, barKey := ca.issue(t, "bar wildcard", "*.bar.example.com")
	for _, s := range []*v1.Secret{tlsSecret("foo-tls", SecretTypeTLS, fooCrt, fooKey), tlsSecret("bar-tls", SecretTypeTLS, barCrt, barKey),
		tlsSecret("opaque", "Opaque", fooCrt, fooKey)} {
		if _, err := secrets.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	cl.service("web", cl.backend("web"))
	cl.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: secure
spec:
  tls:
  - hosts: [foo.example.com]
    secretName: foo-tls
  - hosts: ["*.bar.example.com"]
    secretName: bar-tls
  - hosts: [bad.example.com]
    secretName: opaque
  rules:
  - http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
`)
	// get asks over HTTPS with SNI name, returning the served certificate's subject.
	get := func(name string, verify bool) (string, error) {
		tc := &tls.Config{ServerName: name, RootCAs: ca.pool, InsecureSkipVerify: !verify}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}, Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", "https://"+cl.https+"/path", nil)
		req.Host = name
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("status %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].Subject.CommonName, nil
	}
	want := func(name string, verify bool, cn string) {
		t.Helper()
		wait.Eventually(t, 20*time.Second, name+" served with "+cn, func() error {
			got, err := get(name, verify)
			if err != nil {
				return err
			}
			if got != cn {
				return fmt.Errorf("certificate %q", got)
			}
			return nil
		})
	}
	want("foo.example.com", true, "foo v1")
	want("x.bar.example.com", true, "bar wildcard")
	want("other.example.com", false, "Tugboat Ingress Controller Fake Certificate")
	want("bad.example.com", false, "Tugboat Ingress Controller Fake Certificate")
	if _, err := get("other.example.com", true); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("the default certificate verified against the test CA: %v", err)
	}
	ev := cl.event("secure", "BadTLSSecret")
	if !strings.Contains(ev.GetMessage(), `"default/opaque"`) || !strings.Contains(ev.GetMessage(), "Using default certificate") {
		t.Errorf("BadTLSSecret event: %q", ev.GetMessage())
	}

	// Renew foo's certificate: the next handshake gets it.
	crt2, key2 := ca.issue(t, "foo v2", "foo.example.com")
	if _, err := secrets.Mutate(ctx, "default", "foo-tls", false, func(s *v1.Secret) error {
		s.Data = map[string][]byte{"tls.crt": crt2, "tls.key": key2}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want("foo.example.com", true, "foo v2")
}
