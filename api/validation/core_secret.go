package validation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The Secret types whose data Kubernetes checks, and their keys.
const (
	SecretTypeOpaque           = "Opaque"
	SecretTypeDockercfg        = "kubernetes.io/dockercfg"
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	SecretTypeBasicAuth        = "kubernetes.io/basic-auth"
	SecretTypeSSHAuth          = "kubernetes.io/ssh-auth"
	SecretTypeTLS              = "kubernetes.io/tls"
	// DockerConfigKey holds a ~/.dockercfg file: {"server": {"auth": ...}}.
	DockerConfigKey = ".dockercfg"
	// DockerConfigJSONKey holds a ~/.docker/config.json file:
	// {"auths": {"server": {"auth": ...}}}.
	DockerConfigJSONKey = ".dockerconfigjson"
	// BasicAuthUsernameKey and BasicAuthPasswordKey are a basic-auth
	// secret's keys: at least one of them must be there (either may be
	// empty).
	BasicAuthUsernameKey = "username"
	BasicAuthPasswordKey = "password"
	// SSHAuthPrivateKey is an ssh-auth secret's key, required non-empty.
	SSHAuthPrivateKey = "ssh-privatekey"
	// TLSCertKey and TLSPrivateKeyKey are a tls secret's keys, both
	// required (their contents are not checked, as in Kubernetes).
	TLSCertKey       = "tls.crt"
	TLSPrivateKeyKey = "tls.key"
)

// Secret validates a secret as Kubernetes' ValidateSecret does: its
// keys, and the keys its type requires — the registry credential types
// their file, holding JSON; basic-auth a username or a password;
// ssh-auth a non-empty ssh-privatekey; tls both tls.crt and tls.key
// (the contents are never echoed back). Other types (Opaque, custom
// ones) take any keys.
func Secret(s *v1.Secret) Errs {
	var errs Errs
	ObjectMeta(&errs, s.Metadata, true, DNSSubdomain)
	ConfigKeys(&errs, "data", s.Data)
	ConfigKeys(&errs, "stringData", s.StringData)
	switch s.Type {
	case SecretTypeDockercfg:
		dockerConfig(&errs, s, DockerConfigKey)
	case SecretTypeDockerConfigJSON:
		dockerConfig(&errs, s, DockerConfigJSONKey)
	case SecretTypeBasicAuth:
		_, user := secretValue(s, BasicAuthUsernameKey)
		_, password := secretValue(s, BasicAuthPasswordKey)
		if !user && !password {
			errs.Add(dataKey(BasicAuthUsernameKey), "Required value")
			errs.Add(dataKey(BasicAuthPasswordKey), "Required value")
		}
	case SecretTypeSSHAuth:
		if v, _ := secretValue(s, SSHAuthPrivateKey); len(v) == 0 {
			errs.Add(dataKey(SSHAuthPrivateKey), "Required value")
		}
	case SecretTypeTLS:
		for _, k := range []string{TLSCertKey, TLSPrivateKeyKey} {
			if _, ok := secretValue(s, k); !ok {
				errs.Add(dataKey(k), "Required value")
			}
		}
	}
	return errs
}

// SecretUpdate is Kubernetes' ValidateSecretUpdate: the type may not
// change, and a secret made immutable stays so, with its data (the new
// secret is defaulted: stringData is in data already).
func SecretUpdate(old, new *v1.Secret) Errs {
	var errs Errs
	if new.Type != old.Type {
		errs.Add("type", "Invalid value: %q: field is immutable", new.Type)
	}
	if old.Immutable {
		if !new.Immutable {
			errs.Add("immutable", "Forbidden: field is immutable when `immutable` is set")
		}
		if !maps.EqualFunc(old.Data, new.Data, bytes.Equal) {
			errs.Add("data", "Forbidden: field is immutable when `immutable` is set")
		}
	}
	return errs
}

// ConfigMapUpdate is Kubernetes' ValidateConfigMapUpdate: a ConfigMap
// made immutable stays so, with its data and binaryData.
func ConfigMapUpdate(old, new *v1.ConfigMap) Errs {
	var errs Errs
	if old.Immutable {
		if !new.Immutable {
			errs.Add("immutable", "Forbidden: field is immutable when `immutable` is set")
		}
		if !maps.Equal(old.Data, new.Data) {
			errs.Add("data", "Forbidden: field is immutable when `immutable` is set")
		}
		if !maps.EqualFunc(old.BinaryData, new.BinaryData, bytes.Equal) {
			errs.Add("binaryData", "Forbidden: field is immutable when `immutable` is set")
		}
	}
	return errs
}

// secretValue is key's value in the secret's data, or in its stringData
// before the defaulting folds it in.
func secretValue(s *v1.Secret, key string) ([]byte, bool) {
	if v, ok := s.Data[key]; ok {
		return v, true
	}
	if v, ok := s.StringData[key]; ok {
		return []byte(v), true
	}
	return nil, false
}

func dataKey(key string) string { return fmt.Sprintf("data[%s]", key) }

// dockerConfig checks that key is in the secret's data (or stringData,
// before the defaulting folds it in) and holds a JSON object.
func dockerConfig(errs *Errs, s *v1.Secret, key string) {
	path := dataKey(key)
	raw, ok := secretValue(s, key)
	if !ok {
		errs.Add(path, "Required value")
		return
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		errs.Add(path, "Invalid value: \"<secret contents redacted>\": %v", err)
	}
}

// imagePullSecrets checks a pod's or service account's references to
// pull secrets: each names a Secret, so a DNS-1123 subdomain. (Kubernetes
// only warns about an empty name; an invalid one could never name a
// Secret, so Tugboat refuses both.)
func imagePullSecrets(errs *Errs, path string, refs []*v1.LocalObjectReference) {
	for i, r := range refs {
		DNSSubdomain(errs, fmt.Sprintf("%s[%d].name", path, i), r.GetName())
	}
}
