package ingress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// SecretTypeTLS is the only Secret type certificates are taken from.
const SecretTypeTLS = "kubernetes.io/tls"

// certTable maps SNI names to certificates; immutable once built, swapped
// like the routing table, so a renewed Secret is served on the next
// handshake without a restart.
type certTable struct {
	exact    map[string]*tls.Certificate
	wildcard map[string]*tls.Certificate // "example.com" for "*.example.com"
	fallback *tls.Certificate            // the default certificate
}

// lookup picks the certificate of a ClientHello's server name: an exact
// name, else a wildcard one label up, else the default certificate.
func (c *certTable) lookup(name string) *tls.Certificate {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if cert := c.exact[name]; cert != nil {
		return cert
	}
	if _, parent, ok := strings.Cut(name, "."); ok {
		if cert := c.wildcard[parent]; cert != nil {
			return cert
		}
	}
	return c.fallback
}

// buildCerts loads the TLS Secrets of the served Ingresses; a missing,
// mistyped or unparsable Secret is a problem (its hosts get the default
// certificate). A tls entry without hosts covers its Ingress's rule hosts.
func buildCerts(served []*v1.Ingress, secret func(key string) (*v1.Secret, bool), fallback *tls.Certificate) (*certTable, []Problem) {
	t := &certTable{exact: map[string]*tls.Certificate{}, wildcard: map[string]*tls.Certificate{}, fallback: fallback}
	var problems []Problem
	parsed := map[string]*tls.Certificate{}
	for _, ing := range served {
		for _, entry := range ing.GetSpec().GetTls() {
			if entry.GetSecretName() == "" {
				continue
			}
			key := ing.GetMetadata().GetNamespace() + "/" + entry.GetSecretName()
			cert, ok := parsed[key]
			if !ok {
				var err error
				cert, err = loadCert(key, secret)
				if err != nil {
					problems = append(problems, Problem{Ingress: ing, Reason: "BadTLSSecret",
						Message: fmt.Sprintf("Error getting SSL certificate %q: %v. Using default certificate", key, err)})
				}
				parsed[key] = cert
			}
			if cert == nil {
				continue
			}
			hosts := entry.GetHosts()
			if len(hosts) == 0 {
				for _, r := range ing.GetSpec().GetRules() {
					if r.GetHost() != "" {
						hosts = append(hosts, r.GetHost())
					}
				}
			}
			for _, h := range hosts {
				m, name := t.exact, h
				if strings.HasPrefix(h, "*.") {
					m, name = t.wildcard, h[2:]
				}
				if m[name] == nil { // the oldest Ingress wins, as for rules
					m[name] = cert
				}
			}
		}
	}
	return t, problems
}

func loadCert(key string, secret func(string) (*v1.Secret, bool)) (*tls.Certificate, error) {
	s, ok := secret(key)
	if !ok {
		return nil, fmt.Errorf("secret not found, or not of type %s", SecretTypeTLS)
	}
	if s.GetType() != SecretTypeTLS {
		return nil, fmt.Errorf("secret is of type %q, not %s", s.GetType(), SecretTypeTLS)
	}
	cert, err := tls.X509KeyPair(s.GetData()["tls.crt"], s.GetData()["tls.key"])
	if err != nil {
		return nil, fmt.Errorf("tls.crt/tls.key: %v", err)
	}
	return &cert, nil
}

// defaultCertificate is a self-signed certificate made at start, served
// to names no Ingress has a valid certificate for (ingress-nginx's "Fake
// Certificate").
func defaultCertificate() (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{Organization: []string{"Tugboat"}, CommonName: "Tugboat Ingress Controller Fake Certificate"},
		DNSNames:     []string{"ingress.local"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
