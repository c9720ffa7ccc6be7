package clientconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Loaded is the configuration as read from its Sources: the clusters,
// users and contexts of its files, merged as kubectl merges a KUBECONFIG
// list (for a name in several files, the first file's entry; the first
// current-context set), with every path made absolute. It is held as
// client-go's kubeconfig model whatever the files' form, so reading and
// editing are written once; Save writes a changed copy back in the form
// each file has: a kubeconfig stanza to the file it came from (new ones
// to Sources.Path), as kubectl config does; tugctl's own form whole.
type Loaded struct {
	Config  *api.Config
	Sources Sources
	// own is set when the one file is in tugctl's own form.
	own bool
	// flat is set for tugctl's flat form (one implicit context).
	flat bool
	// order keeps the entries of tugctl's own form in file order, for
	// messages and to write them back in place.
	order struct{ clusters, users, contexts []string }
}

// GRPCExtension is the name of the kubeconfig cluster extension that
// holds the apiserver's gRPC address (tugctl talks gRPC; the cluster's
// server is the Kubernetes HTTP API kubectl talks to):
//
//	clusters:
//	- name: lab
//	  cluster:
//	    server: https://10.0.0.10:6444
//	    certificate-authority: ca.crt
//	    extensions:
//	    - name: tugboat.io/grpc
//	      extension: {server: 10.0.0.10:6443}
//
// Without it tugctl dials the server's host on DefaultGRPCPort.
const GRPCExtension = "tugboat.io/grpc"

// DefaultGRPCPort is the apiserver's --listen port by default.
const DefaultGRPCPort = "6443"

// Load reads the files of s.
func Load(s Sources) (*Loaded, error) {
	l := &Loaded{Sources: s}
	if len(s.Files) == 1 {
		path := s.Files[0]
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !s.Required:
			l.Config, l.own = api.NewConfig(), filepath.Base(filepath.Dir(path)) != ".kube"
			return l, nil
		case err != nil:
			return nil, fmt.Errorf("config file: %w", err)
		}
		if !isKubeconfig(data) && s.From != "KUBECONFIG" {
			cf, err := parseConfigFile(path, data)
			if err != nil {
				return nil, err
			}
			l.fromOwn(cf, path)
			return l, nil
		}
	}
	for _, f := range s.Files {
		if data, err := os.ReadFile(f); err == nil && !isKubeconfig(data) && len(data) > 0 {
			return nil, fmt.Errorf("%s (in KUBECONFIG): not a kubeconfig (apiVersion v1, kind Config); tugctl's own config form goes in --config or ~/.tugboat/config", f)
		}
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: s.Files}
	cfg, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %v", err)
	}
	l.Config = cfg
	return l, nil
}

// isKubeconfig tells a kubeconfig from tugctl's own form: a kubeconfig
// has apiVersion or kind, or entries nested under cluster, user and
// context.
func isKubeconfig(data []byte) bool {
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	if _, ok := top["apiVersion"]; ok {
		return true
	}
	if _, ok := top["kind"]; ok {
		return true
	}
	for list, inner := range map[string]string{"clusters": "cluster", "users": "user", "contexts": "context"} {
		entries, _ := top[list].([]any)
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok {
				if _, ok := m[inner]; ok {
					return true
				}
			}
		}
	}
	return false
}

// fromOwn holds tugctl's own form as the kubeconfig model: the gRPC
// server in GRPCExtension, paths absolute, each entry's origin path.
func (l *Loaded) fromOwn(cf *ConfigFile, path string) {
	l.own, l.flat = true, cf.Flat()
	c := *cf
	c.ToContextForm()
	cfg := api.NewConfig()
	for _, e := range c.Clusters {
		cl := api.NewCluster()
		cl.LocationOfOrigin, cl.CertificateAuthority = path, e.CAFile
		if e.Server != "" {
			SetGRPCServer(cl, e.Server)
		}
		cfg.Clusters[e.Name] = cl
		l.order.clusters = append(l.order.clusters, e.Name)
	}
	for _, e := range c.Users {
		u := api.NewAuthInfo()
		u.LocationOfOrigin, u.ClientCertificate, u.ClientKey, u.TokenFile, u.Token = path, e.CertFile, e.KeyFile, e.TokenFile, e.Token
		cfg.AuthInfos[e.Name] = u
		l.order.users = append(l.order.users, e.Name)
	}
	for _, e := range c.Contexts {
		x := api.NewContext()
		x.LocationOfOrigin, x.Cluster, x.AuthInfo, x.Namespace = path, e.Cluster, e.User, e.Namespace
		cfg.Contexts[e.Name] = x
		l.order.contexts = append(l.order.contexts, e.Name)
	}
	cfg.CurrentContext = c.CurrentContext
	_ = clientcmd.ResolveLocalPaths(cfg)
	l.Config = cfg
}

// ContextNames are the contexts, in file order for tugctl's own form,
// else sorted.
func (l *Loaded) ContextNames() []string {
	if l.own {
		var out []string
		for _, n := range l.order.contexts {
			if _, ok := l.Config.Contexts[n]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	out := make([]string, 0, len(l.Config.Contexts))
	for n := range l.Config.Contexts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Own reports whether the configuration is one file in tugctl's own form.
func (l *Loaded) Own() bool { return l.own }

// Flat reports whether it is tugctl's flat form (one context, "default").
func (l *Loaded) Flat() bool { return l.flat }

// Save writes next, a changed copy of l.Config, back to the files.
func (l *Loaded) Save(next *api.Config) error {
	path := l.Sources.Path()
	if l.own {
		cf, err := l.toOwn(next, path)
		if err != nil {
			return err
		}
		if err := SaveConfigFile(path, cf); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
		return nil
	}
	if err := clientcmd.ModifyConfig(access{l.Sources}, *next, true); err != nil {
		return fmt.Errorf("kubeconfig %s: %v", path, err)
	}
	return nil
}

// toOwn writes the model back as tugctl's own form (always the context
// form), entries in their old order and new ones after, sorted; paths
// inside the file's directory relative to it. What that form cannot hold
// is an error naming it.
func (l *Loaded) toOwn(cfg *api.Config, path string) (*ConfigFile, error) {
	cf := &ConfigFile{CurrentContext: cfg.CurrentContext}
	for _, n := range ordered(l.order.clusters, cfg.Clusters) {
		c := cfg.Clusters[n]
		if c.Server != "" || len(c.CertificateAuthorityData) > 0 || c.InsecureSkipTLSVerify || c.TLSServerName != "" {
			return nil, fmt.Errorf("cluster %q: a kube API server URL, inline CA data, insecure-skip-tls-verify or tls-server-name cannot be kept in tugctl's config form (%s): use a kubeconfig (--kubeconfig)", n, path)
		}
		grpc, _ := GRPCServer(c)
		cf.Clusters = append(cf.Clusters, ClusterEntry{Name: n, Server: grpc, CAFile: storedPath(path, c.CertificateAuthority)})
	}
	for _, n := range ordered(l.order.users, cfg.AuthInfos) {
		u := cfg.AuthInfos[n]
		if len(u.ClientCertificateData) > 0 || len(u.ClientKeyData) > 0 || u.Exec != nil || u.AuthProvider != nil || u.Username != "" {
			return nil, fmt.Errorf("user %q: inline certificate data, exec or auth-provider plugins and basic auth cannot be kept in tugctl's config form (%s): use a kubeconfig (--kubeconfig)", n, path)
		}
		cf.Users = append(cf.Users, UserEntry{Name: n, CertFile: storedPath(path, u.ClientCertificate), KeyFile: storedPath(path, u.ClientKey), TokenFile: storedPath(path, u.TokenFile), Token: u.Token})
	}
	for _, n := range ordered(l.order.contexts, cfg.Contexts) {
		c := cfg.Contexts[n]
		cf.Contexts = append(cf.Contexts, ContextEntry{Name: n, Cluster: c.Cluster, User: c.AuthInfo, Namespace: c.Namespace})
	}
	return cf, nil
}

// OwnForm is cfg (l's model, perhaps redacted) in tugctl's own form, as
// tugctl config view prints it: flat if the file is.
func OwnForm(l *Loaded, cfg *api.Config) (*ConfigFile, error) {
	cf, err := l.toOwn(cfg, l.Sources.Path())
	if err != nil || !l.flat || len(cf.Contexts) != 1 || len(cf.Clusters) > 1 || len(cf.Users) > 1 {
		return cf, err
	}
	flat := &ConfigFile{Namespace: cf.Contexts[0].Namespace}
	if len(cf.Clusters) == 1 {
		flat.Server, flat.CAFile = cf.Clusters[0].Server, cf.Clusters[0].CAFile
	}
	if len(cf.Users) == 1 {
		flat.CertFile, flat.KeyFile, flat.TokenFile = cf.Users[0].CertFile, cf.Users[0].KeyFile, cf.Users[0].TokenFile
	}
	return flat, nil
}

// ordered is the names of m: those of old first, in old's order, then
// the new ones sorted.
func ordered[T any](old []string, m map[string]T) []string {
	var out, added []string
	for _, n := range old {
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	for n := range m {
		if !slices.Contains(old, n) {
			added = append(added, n)
		}
	}
	sort.Strings(added)
	return append(out, added...)
}

// storedPath is how an absolute path is written into the config file at
// configPath: relative to the file's directory when inside it, else as it
// is.
func storedPath(configPath, p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return p
	}
	dir, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !startsWithDotDot(rel) {
		return rel
	}
	return p
}

func startsWithDotDot(rel string) bool {
	return len(rel) >= 3 && rel[:3] == ".."+string(filepath.Separator)
}

// GRPCServer is the gRPC address of a cluster: its GRPCExtension, else
// its server URL's host on DefaultGRPCPort (derived is then set), else "".
func GRPCServer(c *api.Cluster) (server string, derived bool) {
	if ext, ok := c.Extensions[GRPCExtension]; ok {
		var v struct {
			Server string `json:"server"`
		}
		switch e := ext.(type) {
		case *runtime.Unknown:
			_ = json.Unmarshal(e.Raw, &v)
		}
		if v.Server != "" {
			return v.Server, false
		}
	}
	if c.Server == "" {
		return "", false
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	return net.JoinHostPort(u.Hostname(), DefaultGRPCPort), true
}

// SetGRPCServer records a cluster's gRPC address in its GRPCExtension.
func SetGRPCServer(c *api.Cluster, server string) {
	if c.Extensions == nil {
		c.Extensions = map[string]runtime.Object{}
	}
	raw, _ := json.Marshal(map[string]string{"server": server})
	c.Extensions[GRPCExtension] = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// access is clientcmd's view of the kubeconfig files, for ModifyConfig.
type access struct{ s Sources }

func (a access) GetLoadingPrecedence() []string { return a.s.Files }
func (a access) GetStartingConfig() (*api.Config, error) {
	return (&clientcmd.ClientConfigLoadingRules{Precedence: a.s.Files}).Load()
}
func (a access) GetDefaultFilename() string { return a.s.Path() }
func (a access) IsExplicitFile() bool       { return len(a.s.Files) == 1 }
func (a access) GetExplicitFile() string {
	if len(a.s.Files) == 1 {
		return a.s.Files[0]
	}
	return ""
}
