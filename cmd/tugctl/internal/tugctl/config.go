package tugctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/component"
)

// DefaultServer is the apiserver address when nothing else names one.
const DefaultServer = "127.0.0.1:6443"

// ConfigFile is the YAML of ~/.tugboat/config. Every field is optional;
// relative file paths are relative to the config file's directory.
//
//	server: 10.0.0.1:6443
//	namespace: web
//	caFile: ca.crt
//
// This is the one place the file is read: contexts (several clusters and
// users, and a current-context) are to be added here.
type ConfigFile struct {
	// Server is the apiserver address host:port.
	Server string `json:"server,omitempty"`
	// Namespace is the default namespace of requests.
	Namespace string `json:"namespace,omitempty"`
	// CAFile, CertFile, KeyFile and TokenFile are as the flags of the same
	// names.
	CAFile    string `json:"caFile,omitempty"`
	CertFile  string `json:"certFile,omitempty"`
	KeyFile   string `json:"keyFile,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`
}

// LoadConfigFile reads a config file. A missing file is an empty config
// when required is false (the default path), an error otherwise.
func LoadConfigFile(path string, required bool) (*ConfigFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return &ConfigFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var cf ConfigFile
	if err := yaml.UnmarshalStrict(data, &cf); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	dir := filepath.Dir(path)
	for _, p := range []*string{&cf.CAFile, &cf.CertFile, &cf.KeyFile, &cf.TokenFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	return &cf, nil
}

// Settings are the resolved connection settings and where they came from.
type Settings struct {
	Server     string
	ServerFrom string // "--server", "TUGBOAT_SERVER", the config file's path, or "default"
	Namespace  string
	ConfigPath string
	CAFile     string
	CertFile   string
	KeyFile    string
	TokenFile  string
}

// resolveSettings applies the precedence flag > environment > config file >
// default to each setting.
func resolveSettings(f globalFlags, getenv func(string) string) (*Settings, error) {
	path, required := f.configPath, true
	if path == "" {
		path = getenv("TUGBOAT_CONFIG")
	}
	if path == "" {
		required = false
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("config file: no home directory (set --config or TUGBOAT_CONFIG): %v", err)
			}
			home = h
		}
		path = filepath.Join(home, ".tugboat", "config")
	}
	cf, err := LoadConfigFile(path, required)
	if err != nil {
		return nil, err
	}
	s := &Settings{ConfigPath: path}
	switch {
	case f.server != "":
		s.Server, s.ServerFrom = f.server, "--server"
	case getenv("TUGBOAT_SERVER") != "":
		s.Server, s.ServerFrom = getenv("TUGBOAT_SERVER"), "TUGBOAT_SERVER"
	case cf.Server != "":
		s.Server, s.ServerFrom = cf.Server, path
	default:
		s.Server, s.ServerFrom = DefaultServer, "default"
	}
	s.Namespace = first(f.namespace, cf.Namespace, "default")
	s.CAFile = first(f.caFile, cf.CAFile)
	s.CertFile = first(f.certFile, cf.CertFile)
	s.KeyFile = first(f.keyFile, cf.KeyFile)
	s.TokenFile = first(f.tokenFile, cf.TokenFile)
	return s, nil
}

// ClientConfig builds the client config, reading the TLS and token files.
func (s *Settings) ClientConfig(userAgent string) (client.Config, error) {
	cf := component.ClientFlags{Server: s.Server, CAFile: s.CAFile, CertFile: s.CertFile, KeyFile: s.KeyFile, TokenFile: s.TokenFile}
	return cf.Config(userAgent)
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
