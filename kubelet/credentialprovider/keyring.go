// Package credentialprovider is the kubelet's registry credential keyring,
// built from a pod's image pull secrets with the matching rules of
// Kubernetes' pkg/credentialprovider: an entry keyed "host[:port][/path]"
// (a scheme and a /v1/ or /v2/ prefix of the path are ignored) serves an
// image whose registry has the same port and as many dot-separated host
// parts, each matching the key's part as a glob ("*.example.com"), and
// whose repository path starts with the key's path. Entries for
// index.docker.io (https://index.docker.io/v1/) serve Docker Hub images.
package credentialprovider

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The Secret types and keys that hold registry credentials.
const (
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	DockerConfigJSONKey        = ".dockerconfigjson"
	SecretTypeDockercfg        = "kubernetes.io/dockercfg"
	DockerConfigKey            = ".dockercfg"
)

// defaultRegistryHost is the key Docker Hub credentials are stored under
// ("https://index.docker.io/v1/" once parsed).
const defaultRegistryHost = "index.docker.io"

// AuthConfig is one user name and password for a registry.
type AuthConfig struct {
	Username, Password string
}

// entry is a config.json auths entry: "auth" (base64 of user:password)
// wins over username and password, as in Kubernetes' DockerConfigEntry.
type entry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// Keyring holds credentials by registry key.
type Keyring struct {
	index []string // keys, most specific (reverse lexical) first
	creds map[string][]AuthConfig
}

// FromSecrets builds a keyring from pull secrets in order: the
// .dockerconfigjson of kubernetes.io/dockerconfigjson secrets and the
// .dockercfg of kubernetes.io/dockercfg ones; secrets of other types are
// skipped, as Kubernetes' MakeDockerKeyring skips them. A secret that does
// not parse is an error naming it.
func FromSecrets(secrets []*v1.Secret) (*Keyring, error) {
	k := &Keyring{creds: map[string][]AuthConfig{}}
	for _, s := range secrets {
		var cfg map[string]entry
		switch b := s.Data[DockerConfigJSONKey]; {
		case s.Type == SecretTypeDockerConfigJSON && len(b) > 0:
			var f struct {
				Auths map[string]entry `json:"auths"`
			}
			if err := json.Unmarshal(b, &f); err != nil {
				return nil, fmt.Errorf("image pull secret %q: %s: %v", s.GetMetadata().GetName(), DockerConfigJSONKey, err)
			}
			cfg = f.Auths
		case s.Type == SecretTypeDockercfg && len(s.Data[DockerConfigKey]) > 0:
			if err := json.Unmarshal(s.Data[DockerConfigKey], &cfg); err != nil {
				return nil, fmt.Errorf("image pull secret %q: %s: %v", s.GetMetadata().GetName(), DockerConfigKey, err)
			}
		default:
			continue
		}
		if err := k.add(cfg); err != nil {
			return nil, fmt.Errorf("image pull secret %q: %w", s.GetMetadata().GetName(), err)
		}
	}
	slices.Sort(k.index)
	k.index = slices.Compact(k.index)
	slices.Reverse(k.index)
	return k, nil
}

// add adds one file's entries, in the order of their keys (a map has
// none; Kubernetes' order is the reverse lexical one of the index anyway).
func (k *Keyring) add(cfg map[string]entry) error {
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	slices.Sort(locs)
	for _, loc := range locs {
		e := cfg[loc]
		ac := AuthConfig{Username: e.Username, Password: e.Password}
		if e.Auth != "" {
			u, p, err := decodeAuth(e.Auth)
			if err != nil {
				return fmt.Errorf("registry %q: %w", loc, err)
			}
			ac = AuthConfig{Username: u, Password: p}
		}
		key, err := registryKey(loc)
		if err != nil {
			continue // Kubernetes logs and skips a key that is not a URL
		}
		k.creds[key] = append(k.creds[key], ac)
		k.index = append(k.index, key)
	}
	return nil
}

// decodeAuth decodes base64(username:password).
func decodeAuth(field string) (string, string, error) {
	b, err := base64.StdEncoding.DecodeString(field)
	if err != nil {
		return "", "", fmt.Errorf("auth: %v", err)
	}
	u, p, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return u, strings.Trim(p, "\x00"), nil
}

// registryKey is the schemeless host[:port][/path] of a config key.
func registryKey(loc string) (string, error) {
	if !strings.HasPrefix(loc, "https://") && !strings.HasPrefix(loc, "http://") {
		loc = "https://" + loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", err
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p != "" && p != "/" {
		return u.Host + p, nil
	}
	return u.Host, nil
}

// Lookup returns the credentials for image (a repository, "host/path",
// or any reference: a tag or digest is ignored), in the order to try
// them, and whether any matched.
func (k *Keyring) Lookup(image string) ([]AuthConfig, bool) {
	image = repository(image)
	var out []AuthConfig
	for _, key := range k.index {
		if match(key, image) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) > 0 {
		return out, true
	}
	if isDefaultRegistry(image) {
		if c, ok := k.creds[defaultRegistryHost]; ok {
			return c, true
		}
	}
	return nil, false
}

// repository strips a digest and a tag from a reference.
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// isDefaultRegistry: an image of Docker Hub ("busybox",
// "library/busybox", "docker.io/library/busybox"), Kubernetes'
// isDefaultRegistryMatch: a first part without "." or ":" is a user name.
func isDefaultRegistry(image string) bool {
	first, _, found := strings.Cut(image, "/")
	switch {
	case first == "":
		return false
	case !found, first == "docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// match is Kubernetes' URLsMatch on schemeless URLs: same port, same
// number of host parts each matching as a glob, the key's path a prefix
// of the image's.
func match(key, image string) bool {
	kh, kp := splitHost(key)
	ih, ip := splitHost(image)
	khost, kport := hostPort(kh)
	ihost, iport := hostPort(ih)
	if kport != iport || !strings.HasPrefix(ip, kp) {
		return false
	}
	kparts, iparts := strings.Split(khost, "."), strings.Split(ihost, ".")
	if len(kparts) != len(iparts) {
		return false
	}
	for i := range kparts {
		if ok, err := filepath.Match(kparts[i], iparts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost splits "host[:port]/path" into the host and "/path".
func splitHost(s string) (host, path string) {
	if i := strings.Index(s, "/"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

func hostPort(h string) (string, string) {
	if host, port, err := net.SplitHostPort(h); err == nil {
		return host, port
	}
	return h, ""
}
