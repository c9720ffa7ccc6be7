package validation_test

import (
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func secret(typ string, data map[string][]byte, stringData map[string]string) func() v1.Object {
	return func() v1.Object {
		return &v1.Secret{Metadata: &v1.ObjectMeta{Name: "reg", Namespace: "default"}, Type: typ, Data: data, StringData: stringData}
	}
}

func TestSecretTypeValidation(t *testing.T) {
	cfgJSON := []byte(`{"auths":{"reg.example:5000":{"auth":"bGFiOnMzY3JldA=="}}}`)
	runValidation(t, []validationCase{
		{name: "opaque without keys", obj: secret("", nil, nil)},
		{name: "dockerconfigjson", obj: secret("kubernetes.io/dockerconfigjson", map[string][]byte{".dockerconfigjson": cfgJSON}, nil)},
		{name: "dockerconfigjson in stringData", obj: secret("kubernetes.io/dockerconfigjson", nil, map[string]string{".dockerconfigjson": string(cfgJSON)})},
		{name: "dockerconfigjson without its key", obj: secret("kubernetes.io/dockerconfigjson", map[string][]byte{".dockercfg": cfgJSON}, nil),
			errors: []string{"data[.dockerconfigjson]: Required value"}},
		{name: "dockerconfigjson not JSON", obj: secret("kubernetes.io/dockerconfigjson", map[string][]byte{".dockerconfigjson": []byte("{auths:")}, nil),
			errors: []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'a'`}},
		{name: "dockerconfigjson not an object", obj: secret("kubernetes.io/dockerconfigjson", map[string][]byte{".dockerconfigjson": []byte(`["x"]`)}, nil),
			errors: []string{`data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array`}},
		{name: "dockercfg", obj: secret("kubernetes.io/dockercfg", map[string][]byte{".dockercfg": []byte(`{"reg.example":{"auth":"bGFiOnMzY3JldA=="}}`)}, nil)},
		{name: "dockercfg without its key", obj: secret("kubernetes.io/dockercfg", map[string][]byte{".dockerconfigjson": cfgJSON}, nil),
			errors: []string{"data[.dockercfg]: Required value"}},
		{name: "dockercfg not JSON", obj: secret("kubernetes.io/dockercfg", map[string][]byte{".dockercfg": []byte("lab:s3cret")}, nil),
			errors: []string{`data[.dockercfg]: Invalid value: "<secret contents redacted>"`}},
	})
	// The contents are never echoed back.
	if got := validate(secret("kubernetes.io/dockerconfigjson", map[string][]byte{".dockerconfigjson": []byte("s3cret-password")}, nil)()); strings.Contains(got, "s3cret") {
		t.Errorf("the error echoes the secret: %s", got)
	}
}

func TestImagePullSecretsValidation(t *testing.T) {
	withRefs := func(refs ...*v1.LocalObjectReference) func() v1.Object {
		return func() v1.Object { p := pod(); p.Spec.ImagePullSecrets = refs; return p }
	}
	saWith := func(refs ...*v1.LocalObjectReference) func() v1.Object {
		return func() v1.Object {
			return &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: "builder", Namespace: "default"}, ImagePullSecrets: refs}
		}
	}
	runValidation(t, []validationCase{
		{name: "two secrets", obj: withRefs(&v1.LocalObjectReference{Name: "regcred"}, &v1.LocalObjectReference{Name: "mirror.creds"})},
		{name: "empty name", obj: withRefs(&v1.LocalObjectReference{Name: "regcred"}, &v1.LocalObjectReference{}),
			errors: []string{"spec.imagePullSecrets[1].name: required"}},
		{name: "invalid name", obj: withRefs(&v1.LocalObjectReference{Name: "Reg_Cred"}),
			errors: []string{`spec.imagePullSecrets[0].name: "Reg_Cred" must be a DNS-1123 subdomain`}},
		{name: "in a deployment's template", obj: func() v1.Object {
			d := deployment()
			d.Spec.Template.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "-bad"}}
			return d
		}, errors: []string{`spec.template.spec.imagePullSecrets[0].name: "-bad" must be a DNS-1123 subdomain`}},
		{name: "service account", obj: saWith(&v1.LocalObjectReference{Name: "regcred"})},
		{name: "service account invalid name", obj: saWith(&v1.LocalObjectReference{Name: "UPPER"}),
			errors: []string{`imagePullSecrets[0].name: "UPPER" must be a DNS-1123 subdomain`}},
	})
}
