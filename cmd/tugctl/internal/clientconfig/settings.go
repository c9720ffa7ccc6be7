package clientconfig

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/component"
)

// Settings are the resolved connection settings and where they came from.
type Settings struct {
	Server     string
	ServerFrom string // "--server", "TUGBOAT_SERVER", `context "x" in PATH`, or "default"
	Namespace  string
	ConfigPath string
	Context    string
	CAFile     string
	CertFile   string
	KeyFile    string
	TokenFile  string
	// Token is the context's inline token, used when no token file is set.
	Token string
	// InsecurePlaintextToken consents to a token over plaintext (loopback only).
	InsecurePlaintextToken bool
}

// Flags are the command line's connection flags; empty is unset.
type Flags struct {
	Server     string // --server
	ConfigPath string // --config
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

// Path is the config file to use and whether it must exist: --config,
// else $TUGBOAT_CONFIG, else ~/.tugboat/config (optional).
func Path(f Flags, getenv func(string) string) (string, bool, error) {
	if f.ConfigPath != "" {
		return f.ConfigPath, true, nil
	}
	if p := getenv("TUGBOAT_CONFIG"); p != "" {
		return p, true, nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", false, fmt.Errorf("config file: no home directory (set --config or TUGBOAT_CONFIG): %v", err)
		}
		home = h
	}
	return filepath.Join(home, ".tugboat", "config"), false, nil
}

// Resolve applies the precedence flag > environment > the config file's
// context (--context, else current-context) > default to each setting.
func Resolve(f Flags, getenv func(string) string) (*Settings, error) {
	path, required, err := Path(f, getenv)
	if err != nil {
		return nil, err
	}
	cf, err := LoadConfigFile(path, required || f.Context != "")
	if err != nil {
		return nil, err
	}
	c, err := cf.Context(f.Context, path)
	if err != nil {
		return nil, err
	}
	s := &Settings{ConfigPath: path, Context: c.Name}
	switch {
	case f.Server != "":
		s.Server, s.ServerFrom = f.Server, "--server"
	case getenv("TUGBOAT_SERVER") != "":
		s.Server, s.ServerFrom = getenv("TUGBOAT_SERVER"), "TUGBOAT_SERVER"
	case c.Server != "" && cf.Flat():
		s.Server, s.ServerFrom = c.Server, path
	case c.Server != "":
		s.Server, s.ServerFrom = c.Server, fmt.Sprintf("context %q in %s", c.Name, path)
	default:
		s.Server, s.ServerFrom = DefaultServer, "default"
	}
	s.Namespace = cmp.Or(f.Namespace, c.Namespace, "default")
	s.CAFile = cmp.Or(f.CAFile, c.CAFile)
	s.CertFile = cmp.Or(f.CertFile, c.CertFile)
	s.KeyFile = cmp.Or(f.KeyFile, c.KeyFile)
	s.TokenFile = cmp.Or(f.TokenFile, c.TokenFile)
	if f.TokenFile == "" && c.TokenFile == "" {
		s.Token = c.Token
	}
	s.InsecurePlaintextToken = f.InsecurePlaintextToken
	return s, nil
}

// ClientConfig builds the client config, reading the TLS and token files.
func (s *Settings) ClientConfig(userAgent string) (client.Config, error) {
	cf := component.ClientFlags{Server: s.Server, CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile, TokenFile: s.TokenFile}
	cfg, err := cf.Config(userAgent)
	if err != nil {
		return cfg, err
	}
	if cfg.Token == "" {
		cfg.Token = s.Token
	}
	cfg.AllowPlaintextToken = s.InsecurePlaintextToken
	return cfg, nil
}
