package clientconfig

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/tugboat/tugboat/api/client"
)

// Settings are the resolved connection settings and where they came from.
type Settings struct {
	Server     string
	ServerFrom string // "--server", "TUGBOAT_SERVER", `context "x" in PATH`, or "default"
	Namespace  string
	// ConfigPath is the file edits go to (Sources.Path).
	ConfigPath string
	Context    string
	// TLS is on with a CA (file or data), an https kubeconfig server or
	// insecure-skip-tls-verify.
	TLS                   bool
	CAFile                string
	CAData                []byte
	InsecureSkipTLSVerify bool
	TLSServerName         string
	CertFile, KeyFile     string
	CertData, KeyData     []byte
	TokenFile             string
	// Token is the user's inline token, used when no token file is set.
	Token string
	// InsecurePlaintextToken consents to a token over plaintext (loopback only).
	InsecurePlaintextToken bool
}

// Flags are the command line's connection flags; empty is unset.
type Flags struct {
	Server     string // --server
	ConfigPath string // --config
	Kubeconfig string // --kubeconfig
	Context    string // --context
	Namespace  string // -n, --namespace
	CAFile     string // --ca-file
	CertFile   string // --cert-file
	KeyFile    string // --key-file
	TokenFile  string // --token-file
	// InsecurePlaintextToken is --insecure-plaintext-token: send the
	// bearer token although there is no CA (plaintext), to a loopback
	// server only.
	InsecurePlaintextToken bool
}

// Resolve applies the precedence flag > environment > the config's
// context (--context, else current-context) > default to each setting.
func Resolve(f Flags, getenv func(string) string) (*Settings, error) {
	src, err := FindSources(f, getenv)
	if err != nil {
		return nil, err
	}
	if f.Context != "" && src.From == "default" {
		src.Required = true // a context needs a file that has it
	}
	l, err := Load(src)
	if err != nil {
		return nil, err
	}
	c, err := l.Context(f.Context)
	if err != nil {
		return nil, err
	}
	s := &Settings{ConfigPath: src.Path(), Context: c.Name}
	switch {
	case f.Server != "":
		s.Server, s.ServerFrom = f.Server, "--server"
	case getenv("TUGBOAT_SERVER") != "":
		s.Server, s.ServerFrom = getenv("TUGBOAT_SERVER"), "TUGBOAT_SERVER"
	case c.Server != "" && l.Flat():
		s.Server, s.ServerFrom = c.Server, c.Origin
	case c.Server != "" && c.Derived:
		s.Server, s.ServerFrom = c.Server, fmt.Sprintf("context %q in %s: the host of its cluster's server %s on Tugboat's gRPC port %s (set the cluster's %s extension, or --server)",
			c.Name, c.Origin, c.KubeServer, DefaultGRPCPort, GRPCExtension)
	case c.Server != "":
		s.Server, s.ServerFrom = c.Server, fmt.Sprintf("context %q in %s", c.Name, c.Origin)
	default:
		s.Server, s.ServerFrom = DefaultServer, "default"
	}
	s.Namespace = cmp.Or(f.Namespace, c.Namespace, "default")
	s.CAFile, s.CAData = cmp.Or(f.CAFile, c.CAFile), c.CAData
	if f.CAFile != "" {
		s.CAData = nil
	}
	s.InsecureSkipTLSVerify, s.TLSServerName = c.Insecure, c.TLSServerName
	s.TLS = s.CAFile != "" || len(s.CAData) > 0 || s.InsecureSkipTLSVerify || c.HTTPS
	s.CertFile, s.KeyFile, s.CertData, s.KeyData = c.CertFile, c.KeyFile, c.CertData, c.KeyData
	if f.CertFile != "" || f.KeyFile != "" {
		s.CertFile, s.KeyFile, s.CertData, s.KeyData = f.CertFile, f.KeyFile, nil, nil
	}
	s.TokenFile = cmp.Or(f.TokenFile, c.TokenFile)
	if f.TokenFile == "" && c.TokenFile == "" {
		s.Token = c.Token
	}
	s.InsecurePlaintextToken = f.InsecurePlaintextToken
	return s, nil
}

// Context is a context as used: its cluster's and user's settings, with
// file paths absolute.
type Context struct {
	Name      string
	Namespace string
	// Server is the gRPC address; Derived says it was made from the
	// kubeconfig server KubeServer (no GRPCExtension).
	Server, KubeServer string
	Derived, HTTPS     bool
	// Origin is the file the context came from.
	Origin                               string
	CAFile, CertFile, KeyFile, TokenFile string
	CAData, CertData, KeyData            []byte
	Insecure                             bool
	TLSServerName                        string
	Token                                string
}

// Context returns the named context (name "" is the current one). No
// context at all is an empty one.
func (l *Loaded) Context(name string) (*Context, error) {
	explicit := name != ""
	desc := l.Sources.Describe()
	if name == "" {
		name = l.Config.CurrentContext
	}
	if name == "" {
		return &Context{}, nil
	}
	x, ok := l.Config.Contexts[name]
	if !ok {
		if l.flat {
			return nil, fmt.Errorf("context %q not found: %s has no contexts, only the flat form (context %q)", name, desc, ImplicitContext)
		}
		what := "current-context"
		if explicit {
			what = "--context"
		}
		return nil, fmt.Errorf("%s %q: no such context in %s (have: %s)", what, name, desc, cmp.Or(strings.Join(l.ContextNames(), ", "), "<none>"))
	}
	c := &Context{Name: name, Namespace: x.Namespace, Origin: cmp.Or(x.LocationOfOrigin, desc)}
	if x.Cluster != "" {
		cl, ok := l.Config.Clusters[x.Cluster]
		if !ok {
			return nil, fmt.Errorf("context %q: cluster %q is not in %s", name, x.Cluster, desc)
		}
		c.Server, c.Derived = GRPCServer(cl)
		c.KubeServer = cl.Server
		if u, err := url.Parse(cl.Server); err == nil && u.Scheme == "https" {
			c.HTTPS = true
		}
		c.CAFile, c.CAData, c.Insecure, c.TLSServerName = cl.CertificateAuthority, cl.CertificateAuthorityData, cl.InsecureSkipTLSVerify, cl.TLSServerName
	}
	if x.AuthInfo != "" {
		u, ok := l.Config.AuthInfos[x.AuthInfo]
		if !ok {
			return nil, fmt.Errorf("context %q: user %q is not in %s", name, x.AuthInfo, desc)
		}
		switch {
		case u.Exec != nil:
			return nil, fmt.Errorf("user %q: exec credential plugins are not supported by tugctl: use a client certificate or a token", x.AuthInfo)
		case u.AuthProvider != nil:
			return nil, fmt.Errorf("user %q: auth-provider %q is not supported by tugctl: use a client certificate or a token", x.AuthInfo, u.AuthProvider.Name)
		case u.Username != "" || u.Password != "":
			return nil, fmt.Errorf("user %q: basic authentication is not supported by Tugboat: use a client certificate or a token", x.AuthInfo)
		}
		c.CertFile, c.KeyFile, c.CertData, c.KeyData = u.ClientCertificate, u.ClientKey, u.ClientCertificateData, u.ClientKeyData
		c.TokenFile, c.Token = u.TokenFile, u.Token
	}
	return c, nil
}

// ClientConfig builds the client config, reading the TLS and token files.
func (s *Settings) ClientConfig(userAgent string) (client.Config, error) {
	cfg := client.Config{Server: s.Server, UserAgent: userAgent, Token: s.Token}
	if s.Server == "" {
		return cfg, fmt.Errorf("--server: required")
	}
	if s.TLS {
		t, err := s.tlsConfig()
		if err != nil {
			return cfg, err
		}
		cfg.TLS = t
	} else if s.CertFile != "" || len(s.CertData) > 0 {
		return cfg, fmt.Errorf("--cert-file needs --ca-file")
	}
	if s.TokenFile != "" {
		b, err := os.ReadFile(s.TokenFile)
		if err != nil {
			return cfg, fmt.Errorf("--token-file: %w", err)
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	cfg.AllowPlaintextToken = s.InsecurePlaintextToken
	return cfg, nil
}

// tlsConfig is the connection's TLS: the CA (file, data, else the
// system's roots), the client certificate, TLS 1.3 as the apiserver wants.
func (s *Settings) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: s.TLSServerName, InsecureSkipVerify: s.InsecureSkipTLSVerify}
	ca := s.CAData
	if s.CAFile != "" {
		b, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file/--cert-file/--key-file: CA file: %w", err)
		}
		ca = b
	}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("--ca-file/--cert-file/--key-file: CA file %s: no PEM certificates found", cmp.Or(s.CAFile, "(certificate-authority-data)"))
		}
		cfg.RootCAs = pool
	}
	cert, key := s.CertData, s.KeyData
	if s.CertFile != "" || s.KeyFile != "" {
		var err error
		if cert, err = os.ReadFile(s.CertFile); err != nil {
			return nil, fmt.Errorf("--ca-file/--cert-file/--key-file: client certificate: %w", err)
		}
		if key, err = os.ReadFile(s.KeyFile); err != nil {
			return nil, fmt.Errorf("--ca-file/--cert-file/--key-file: client certificate: %w", err)
		}
	}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--ca-file/--cert-file/--key-file: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
