package pki

import (
	"fmt"
	"net"
	"path/filepath"
	"time"
)

// Well-known users and groups.
const (
	GroupMasters     = "system:masters"
	GroupNodes       = "system:nodes"
	NodeUserPrefix   = "system:node:"
	UserScheduler    = "system:kube-scheduler"
	UserControllers  = "system:kube-controller-manager"
	UserProxy        = "system:kube-proxy"
	UserAdmin        = "admin"
	CertValidity     = 365 * 24 * time.Hour
	NodeCertValidity = 30 * 24 * time.Hour
)

// InitOptions say what `apiserver pki init` makes.
type InitOptions struct {
	Dir         string
	ServerNames []string
	ServerIPs   []net.IP
	// Nodes, if set, also get client certificates (for installs that do
	// not use join tokens).
	Nodes []string
	// EtcdNames and EtcdIPs are extra names of etcd's serving and peer
	// certificates (beyond etcd, localhost, 127.0.0.1, ::1).
	EtcdNames []string
	EtcdIPs   []net.IP
	// ExistingCA signs with the CAs already in Dir (ca.crt and ca.key,
	// etcd/ca.crt and etcd/ca.key: what another server of the control
	// plane copied over) instead of making new ones; every other
	// certificate is made anew, and an existing service-account pair is
	// kept. kubeadm's control-plane join does the same.
	ExistingCA bool
}

// Files lists what Init writes, relative to the directory.
var Files = append([]string{
	"ca.crt", "ca.key",
	"apiserver.crt", "apiserver.key",
	"admin.crt", "admin.key",
	"scheduler.crt", "scheduler.key",
	"controller-manager.crt", "controller-manager.key",
	"proxy.crt", "proxy.key",
	ServiceAccountKey, ServiceAccountPubKey,
}, EtcdFiles...)

// Init makes a CA, the apiserver's serving certificate and client
// certificates for the admin and the control-plane components in dir, and
// the etcd CA and certificates (InitEtcd).
func Init(o InitOptions) error {
	if o.Dir == "" {
		return fmt.Errorf("--dir: required")
	}
	ca, err := initCA(o, "ca.crt", "ca.key", "tugboat-ca")
	if err != nil {
		return err
	}
	names := append([]string{"tugboat-apiserver", "apiserver", "localhost"}, o.ServerNames...)
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, o.ServerIPs...)
	if err := writePair(o.Dir, "apiserver", func(k any) ([]byte, error) {
		return ca.IssueServer(k, names, ips, CertValidity)
	}); err != nil {
		return err
	}
	clients := map[string]Subject{
		"admin":              {User: UserAdmin, Groups: []string{GroupMasters}},
		"scheduler":          {User: UserScheduler},
		"controller-manager": {User: UserControllers},
		"proxy":              {User: UserProxy},
	}
	for _, n := range o.Nodes {
		clients["node-"+n] = Subject{User: NodeUserPrefix + n, Groups: []string{GroupNodes}}
	}
	for file, subj := range clients {
		subj := subj
		if err := writePair(o.Dir, file, func(k any) ([]byte, error) { return ca.IssueClient(k, subj, CertValidity) }); err != nil {
			return err
		}
	}
	if err := writeServiceAccountKey(o.Dir); err != nil {
		return err
	}
	return InitEtcd(o)
}

// initCA makes a CA and writes it as certFile and keyFile in o.Dir, or
// with o.ExistingCA loads the pair found there.
func initCA(o InitOptions, certFile, keyFile, name string) (*CA, error) {
	crt, key := filepath.Join(o.Dir, certFile), filepath.Join(o.Dir, keyFile)
	if o.ExistingCA {
		ca, err := LoadCA(crt, key)
		if err != nil {
			return nil, fmt.Errorf("signing with the existing CA in %s: %w", o.Dir, err)
		}
		return ca, nil
	}
	ca, err := NewCA(name, 10*CertValidity)
	if err != nil {
		return nil, err
	}
	caKey, err := KeyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := WriteFile(crt, ca.PEM, 0o644); err != nil {
		return nil, err
	}
	if err := WriteFile(key, caKey, 0o600); err != nil {
		return nil, err
	}
	return ca, nil
}

// writePair writes dir/name.crt and dir/name.key.
func writePair(dir, name string, issue func(pub any) ([]byte, error)) error {
	return writePairAt(dir, name+".crt", name+".key", issue)
}

// writePairAt makes a key, has issue sign its certificate, and writes both
// (the key 0600) at paths relative to dir.
func writePairAt(dir, certFile, keyFile string, issue func(pub any) ([]byte, error)) error {
	key, err := NewKey()
	if err != nil {
		return err
	}
	cert, err := issue(key.Public())
	if err != nil {
		return fmt.Errorf("%s: %w", certFile, err)
	}
	kp, err := KeyPEM(key)
	if err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, certFile), cert, 0o644); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, keyFile), kp, 0o600)
}
