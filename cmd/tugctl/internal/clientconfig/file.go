// Package clientconfig is tugctl's configuration: the files it is read
// from (Sources: --kubeconfig, --config, $TUGBOAT_CONFIG, a $KUBECONFIG
// list, ~/.tugboat/config, ~/.kube/config), in either form — tugctl's own
// (ConfigFile: clusters, users and contexts, or the older flat form) or a
// standard kubeconfig, merged as kubectl merges several — held as
// client-go's kubeconfig model (Loaded) and written back in the form each
// file has; and the resolution of the connection settings (flags >
// environment > the context > defaults) into a client.Config with its TLS
// material and token read. A kubeconfig's cluster server is the
// Kubernetes HTTP API kubectl talks to; tugctl talks gRPC to the address
// in the cluster's tugboat.io/grpc extension, else to that host's port
// 6443.
//
// It is the one place the config files are read and written; it knows
// nothing of cobra or of the terminal, so any front end (the CLI, a
// console) gets the same settings from the same flags.
package clientconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/internal/atomicfile"
)

// DefaultServer is the apiserver address when nothing else names one.
const DefaultServer = "127.0.0.1:6443"

// ImplicitContext names the one context of a config file in the flat form.
const ImplicitContext = "default"

// ConfigFile is the YAML of ~/.tugboat/config. Every field is optional;
// relative file paths are relative to the config file's directory.
//
// The kubeconfig-like form names clusters, users and contexts joining
// them, and picks one with current-context (or --context):
//
//	clusters:
//	- {name: prod, server: 10.0.0.1:6443, caFile: prod/ca.crt}
//	users:
//	- {name: admin, certFile: prod/admin.crt, keyFile: prod/admin.key}
//	contexts:
//	- {name: prod, cluster: prod, user: admin, namespace: web}
//	current-context: prod
//
// The flat form (server, namespace, caFile, ... at the top level) is one
// implicit context named "default"; a file uses one form or the other.
// This is the one place the file is read and written.
type ConfigFile struct {
	// Server is the apiserver address host:port (flat form).
	Server string `json:"server,omitempty"`
	// Namespace is the default namespace of requests (flat form).
	Namespace string `json:"namespace,omitempty"`
	// CAFile, CertFile, KeyFile and TokenFile are as the flags of the same
	// names (flat form).
	CAFile    string `json:"caFile,omitempty"`
	CertFile  string `json:"certFile,omitempty"`
	KeyFile   string `json:"keyFile,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`

	Clusters       []ClusterEntry `json:"clusters,omitempty"`
	Users          []UserEntry    `json:"users,omitempty"`
	Contexts       []ContextEntry `json:"contexts,omitempty"`
	CurrentContext string         `json:"current-context,omitempty"`
}

// ClusterEntry is an apiserver and the CA that signed its certificate.
type ClusterEntry struct {
	Name   string `json:"name"`
	Server string `json:"server,omitempty"`
	CAFile string `json:"caFile,omitempty"`
}

// UserEntry is a set of credentials: a client certificate, a bearer token
// in a file, or the token itself.
type UserEntry struct {
	Name      string `json:"name"`
	CertFile  string `json:"certFile,omitempty"`
	KeyFile   string `json:"keyFile,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`
	Token     string `json:"token,omitempty"`
}

// ContextEntry joins a cluster, a user and a default namespace.
type ContextEntry struct {
	Name      string `json:"name"`
	Cluster   string `json:"cluster,omitempty"`
	User      string `json:"user,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// parseConfigFile reads a config file in tugctl's own form as written
// (relative paths stay relative), checking it strictly: an unknown key, a
// duplicate name or mixed forms are errors naming them.
func parseConfigFile(path string, data []byte) (*ConfigFile, error) {
	var cf ConfigFile
	if err := yaml.UnmarshalStrict(data, &cf); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	if err := cf.Validate(); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	return &cf, nil
}

// Validate checks names are set and unique and the two forms are not mixed.
func (cf *ConfigFile) Validate() error {
	if cf.Flat() && (len(cf.Clusters)+len(cf.Users)+len(cf.Contexts) > 0 || cf.CurrentContext != "") {
		return fmt.Errorf("server/namespace/caFile/certFile/keyFile/tokenFile: use either these top-level keys or clusters/users/contexts, not both")
	}
	check := func(list string, names []string) error {
		seen := map[string]bool{}
		for i, n := range names {
			if n == "" {
				return fmt.Errorf("%s[%d].name: required", list, i)
			}
			if seen[n] {
				return fmt.Errorf("%s[%d].name: %q appears twice", list, i, n)
			}
			seen[n] = true
		}
		return nil
	}
	if err := check("clusters", names(cf.Clusters, func(c ClusterEntry) string { return c.Name })); err != nil {
		return err
	}
	if err := check("users", names(cf.Users, func(u UserEntry) string { return u.Name })); err != nil {
		return err
	}
	return check("contexts", cf.ContextNames())
}

func names[T any](list []T, name func(T) string) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = name(x)
	}
	return out
}

func (cf *ConfigFile) ContextNames() []string {
	return names(cf.Contexts, func(c ContextEntry) string { return c.Name })
}

// Flat reports whether the file uses the flat form.
func (cf *ConfigFile) Flat() bool {
	return cf.Server != "" || cf.Namespace != "" || cf.CAFile != "" || cf.CertFile != "" || cf.KeyFile != "" || cf.TokenFile != ""
}

// ToContextForm turns the flat form into a cluster, a user and a context named
// "default" (the current one), so the file can gain more.
func (cf *ConfigFile) ToContextForm() {
	if !cf.Flat() {
		return
	}
	cf.Clusters = []ClusterEntry{{Name: ImplicitContext, Server: cf.Server, CAFile: cf.CAFile}}
	cf.Users = []UserEntry{{Name: ImplicitContext, CertFile: cf.CertFile, KeyFile: cf.KeyFile, TokenFile: cf.TokenFile}}
	cf.Contexts = []ContextEntry{{Name: ImplicitContext, Cluster: ImplicitContext, User: ImplicitContext, Namespace: cf.Namespace}}
	cf.CurrentContext = ImplicitContext
	cf.Server, cf.Namespace, cf.CAFile, cf.CertFile, cf.KeyFile, cf.TokenFile = "", "", "", "", "", ""
}

// SaveConfigFile writes cf to path (0600, through a temporary file and a
// rename), making its directory if needed.
func SaveConfigFile(path string, cf *ConfigFile) error {
	if err := cf.Validate(); err != nil {
		return err
	}
	data, err := yaml.Marshal(cf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if err := atomicfile.Write(path, bytes.NewReader(data), 0o600); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	return nil
}
