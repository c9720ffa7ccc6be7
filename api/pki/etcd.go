package pki

import (
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"net"
)

// The etcd part of the bundle, relative to the PKI folder: a CA of its own
// (so no cluster certificate — a node's, a user's — opens etcd), etcd's
// serving and peer certificates, and the apiserver's client certificate.
// Layout as kubeadm's.
const (
	EtcdCACert     = "etcd/ca.crt"
	EtcdCAKey      = "etcd/ca.key"
	EtcdServerCert = "etcd/server.crt"
	EtcdServerKey  = "etcd/server.key"
	EtcdPeerCert   = "etcd/peer.crt"
	EtcdPeerKey    = "etcd/peer.key"
	EtcdClientCert = "apiserver-etcd-client.crt"
	EtcdClientKey  = "apiserver-etcd-client.key"
	UserEtcdClient = "tugboat-apiserver-etcd-client"
	etcdCAName     = "tugboat-etcd-ca"
)

// EtcdFiles lists what InitEtcd writes, relative to the directory.
var EtcdFiles = []string{EtcdCACert, EtcdCAKey, EtcdServerCert, EtcdServerKey, EtcdPeerCert, EtcdPeerKey, EtcdClientCert, EtcdClientKey}

// InitEtcd makes the etcd CA and certificates in o.Dir: etcd's serving and
// peer certificates (both usable as server and client, as etcd's peers
// dial each other with them) for "etcd", "localhost", 127.0.0.1, ::1 and
// o.EtcdNames / o.EtcdIPs, and the apiserver's etcd client certificate;
// with o.ExistingCA signed by the etcd CA already in o.Dir.
func InitEtcd(o InitOptions) error {
	if o.Dir == "" {
		return fmt.Errorf("--dir: required")
	}
	ca, err := initCA(o, EtcdCACert, EtcdCAKey, etcdCAName)
	if err != nil {
		return err
	}
	names := append([]string{"etcd", "localhost"}, o.EtcdNames...)
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, o.EtcdIPs...)
	for _, pair := range []struct{ cert, key, cn string }{
		{EtcdServerCert, EtcdServerKey, "etcd-server"},
		{EtcdPeerCert, EtcdPeerKey, "etcd-peer"},
	} {
		if err := writePairAt(o.Dir, pair.cert, pair.key, func(pub any) ([]byte, error) {
			return ca.issueServerClient(pub, pair.cn, names, ips)
		}); err != nil {
			return err
		}
	}
	return writePairAt(o.Dir, EtcdClientCert, EtcdClientKey, func(pub any) ([]byte, error) {
		return ca.IssueClient(pub, Subject{User: UserEtcdClient}, CertValidity)
	})
}

// issueServerClient signs a certificate good for serving names and ips and
// for dialling as a client (etcd peers do both with one certificate).
func (ca *CA) issueServerClient(pub any, cn string, names []string, ips []net.IP) ([]byte, error) {
	tmpl := leaf(cn, CertValidity)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tmpl.DNSNames, tmpl.IPAddresses = names, ips
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, err
	}
	return pemCert(der), nil
}
