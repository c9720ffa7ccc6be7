package validation

import (
	"encoding/json"
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The Secret types whose data Kubernetes checks, and their keys.
const (
	SecretTypeOpaque           = "Opaque"
	SecretTypeDockercfg        = "kubernetes.io/dockercfg"
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	// DockerConfigKey holds a ~/.dockercfg file: {"server": {"auth": ...}}.
	DockerConfigKey = ".dockercfg"
	// DockerConfigJSONKey holds a ~/.docker/config.json file:
	// {"auths": {"server": {"auth": ...}}}.
	DockerConfigJSONKey = ".dockerconfigjson"
)

// Secret validates a secret: its keys, and for the registry credential
// types the key their type requires, holding JSON, as Kubernetes'
// ValidateSecret checks (the contents are never echoed back).
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
	}
	return errs
}

// dockerConfig checks that key is in the secret's data (or stringData,
// before the defaulting folds it in) and holds a JSON object.
func dockerConfig(errs *Errs, s *v1.Secret, key string) {
	path := fmt.Sprintf("data[%s]", key)
	raw, ok := s.Data[key]
	if !ok {
		str, sok := s.StringData[key]
		if !sok {
			errs.Add(path, "Required value")
			return
		}
		raw = []byte(str)
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
