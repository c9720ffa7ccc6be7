package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tugboat/tugboat/api/pki"
)

// pkiConfig is what `tugboat-init pki` makes.
type pkiConfig struct {
	pki.InitOptions
	// EncryptionKey, if set, is a file (relative to Dir) that gets one
	// random AES-256 key for Secrets at rest unless it exists.
	EncryptionKey string
	// Bundles copy, per component, only the files it needs into a folder
	// of its own (a volume only that component mounts), so a node never
	// holds the CA key or another node's key.
	Bundles []bundle
}

// bundle is one --bundle ROLE=DIR.
type bundle struct {
	Role string // scheduler, controller-manager, proxy, etcd, node/NAME
	Dir  string
}

// files lists what a role's bundle holds, relative to the PKI folder; the
// bundle folder holds them by their base names.
func (b bundle) files() ([]string, error) {
	switch {
	case b.Role == "scheduler" || b.Role == "controller-manager" || b.Role == "proxy":
		return []string{"ca.crt", b.Role + ".crt", b.Role + ".key"}, nil
	case b.Role == "etcd":
		// etcd's serving and peer pairs and the etcd CA (etcd/ca.crt): no
		// cluster certificate, so etcd trusts only the apiserver's.
		return []string{pki.EtcdCACert, pki.EtcdServerCert, pki.EtcdServerKey, pki.EtcdPeerCert, pki.EtcdPeerKey}, nil
	case strings.HasPrefix(b.Role, "node/") && len(b.Role) > len("node/"):
		n := "node-" + strings.TrimPrefix(b.Role, "node/")
		// A node runs the kubelet and the proxy.
		return []string{"ca.crt", n + ".crt", n + ".key", "proxy.crt", "proxy.key"}, nil
	}
	return nil, fmt.Errorf("role %q: want scheduler, controller-manager, proxy, etcd or node/NAME", b.Role)
}

func parseBundle(s string) (bundle, error) {
	role, dir, ok := strings.Cut(s, "=")
	b := bundle{Role: role, Dir: dir}
	if !ok || !filepath.IsAbs(dir) {
		return b, fmt.Errorf("--bundle %q: want ROLE=/absolute/dir", s)
	}
	if _, err := b.files(); err != nil {
		return b, fmt.Errorf("--bundle %q: %w", s, err)
	}
	return b, nil
}

func (c pkiConfig) Validate() error {
	if c.Dir == "" {
		return errors.New("--dir: required")
	}
	for _, b := range c.Bundles {
		if strings.HasPrefix(b.Role, "node/") {
			n := strings.TrimPrefix(b.Role, "node/")
			found := false
			for _, have := range c.Nodes {
				found = found || have == n
			}
			if !found {
				return fmt.Errorf("--bundle %s: node %q is not in --nodes", b.Role, n)
			}
		}
	}
	return nil
}

// runPKI makes the cluster's certificates on the first start of a compose
// cluster: the same bundle as `apiserver pki init`, written into the shared
// volume, then copies each component's part into its own folder.
func runPKI(_ context.Context, args []string) error {
	var c pkiConfig
	var names pki.InitFlags
	var bundles []string
	fl := flag.NewFlagSet("tugboat-init pki", flag.ContinueOnError)
	fl.StringVar(&c.Dir, "dir", "/pki", "folder of all certificates and keys (mounted only here and by the apiserver)")
	names.Register(fl)
	fl.StringVar(&c.EncryptionKey, "encryption-key", "", "file in --dir to create with a random key for Secrets at rest (apiserver --encryption-key-file)")
	fl.Func("bundle", "ROLE=DIR: copy what ROLE (scheduler, controller-manager, proxy, etcd, node/NAME) needs into DIR; repeatable", func(s string) error {
		bundles = append(bundles, s)
		return nil
	})
	if err := fl.Parse(args); err != nil {
		return err
	}
	var err error
	if c.InitOptions, err = names.Options(c.Dir); err != nil {
		return err
	}
	for _, s := range bundles {
		b, err := parseBundle(s)
		if err != nil {
			return err
		}
		c.Bundles = append(c.Bundles, b)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	made, err := ensurePKI(c)
	if err != nil {
		return err
	}
	if len(made) == 0 {
		fmt.Printf("pki: certificates in %s already exist\n", c.Dir)
	} else {
		fmt.Printf("pki: wrote %s to %s\n", strings.Join(made, ", "), c.Dir)
	}
	return nil
}

// ensurePKI makes the bundle when the CA is missing, else only the node
// certificates and the etcd certificates that are missing: a CA that
// exists is kept (pki.Init would replace it and orphan every certificate
// it signed). Then the encryption key and the per-component bundles. It
// returns what it made.
func ensurePKI(c pkiConfig) ([]string, error) {
	caCrt, caKey := filepath.Join(c.Dir, "ca.crt"), filepath.Join(c.Dir, "ca.key")
	var made []string
	if _, err := os.Stat(caCrt); errors.Is(err, fs.ErrNotExist) {
		if err := pki.Init(c.InitOptions); err != nil {
			return nil, err
		}
		made = append(made, "the cluster CA and certificates")
	} else if err != nil {
		return nil, err
	} else {
		if _, err := os.Stat(filepath.Join(c.Dir, pki.EtcdCACert)); errors.Is(err, fs.ErrNotExist) {
			// A volume made before etcd had TLS.
			if err := pki.InitEtcd(c.InitOptions); err != nil {
				return nil, err
			}
			made = append(made, "the etcd CA and certificates")
		}
		if _, err := os.Stat(filepath.Join(c.Dir, pki.ServiceAccountKey)); errors.Is(err, fs.ErrNotExist) {
			// A volume made before service account tokens.
			if _, err := pki.EnsureServiceAccountKey(c.Dir); err != nil {
				return made, err
			}
			made = append(made, pki.ServiceAccountKey)
		}
		var ca *pki.CA
		for _, n := range c.Nodes {
			name := "node-" + n
			if _, err := os.Stat(filepath.Join(c.Dir, name+".crt")); err == nil {
				continue
			}
			if ca == nil {
				if ca, err = pki.LoadCA(caCrt, caKey); err != nil {
					return made, fmt.Errorf("existing CA in %s: %w", c.Dir, err)
				}
			}
			if err := issueNode(ca, c.Dir, n); err != nil {
				return made, err
			}
			made = append(made, name+".crt")
		}
	}
	if c.EncryptionKey != "" {
		p := filepath.Join(c.Dir, c.EncryptionKey)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if err := writeEncryptionKey(p); err != nil {
				return made, err
			}
			made = append(made, c.EncryptionKey)
		}
	}
	for _, b := range c.Bundles {
		if err := copyBundle(c.Dir, b); err != nil {
			return made, err
		}
	}
	return made, nil
}

func issueNode(ca *pki.CA, dir, node string) error {
	key, err := pki.NewKey()
	if err != nil {
		return err
	}
	subj := pki.Subject{User: pki.NodeUserPrefix + node, Groups: []string{pki.GroupNodes}}
	crt, err := ca.IssueClient(key.Public(), subj, pki.CertValidity)
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	kp, err := pki.KeyPEM(key)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, "node-"+node)
	if err := pki.WriteFile(name+".crt", crt, 0o644); err != nil {
		return err
	}
	return pki.WriteFile(name+".key", kp, 0o600)
}

// writeEncryptionKey writes "key1:<base64 of 32 random bytes>", the format
// of the apiserver's --encryption-key-file.
func writeEncryptionKey(path string) error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	line := "# AES-256 key for Secrets at rest; the first line encrypts. Rotate: add a new first line, restart (the apiserver re-encrypts every Secret), then drop the old line.\n" +
		"key1:" + base64.StdEncoding.EncodeToString(raw) + "\n"
	return pki.WriteFile(path, []byte(line), 0o600)
}

// copyBundle copies a role's files into its folder (every start: a
// renewed certificate reaches the component on its next restart).
func copyBundle(dir string, b bundle) error {
	files, err := b.files()
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("bundle %s: %w", b.Role, err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f, ".key") {
			mode = 0o600
		}
		if err := pki.WriteFile(filepath.Join(b.Dir, filepath.Base(f)), data, mode); err != nil {
			return fmt.Errorf("bundle %s: %w", b.Role, err)
		}
	}
	return nil
}
