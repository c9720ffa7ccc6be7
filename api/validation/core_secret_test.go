package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
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
		{name: "tls", obj: secret("kubernetes.io/tls", map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")}, nil)},
		{name: "tls in stringData, empty values", obj: secret("kubernetes.io/tls", nil, map[string]string{"tls.crt": "", "tls.key": ""})},
		{name: "tls without its key", obj: secret("kubernetes.io/tls", map[string][]byte{"tls.crt": []byte("cert")}, nil),
			errors: []string{"data[tls.key]: Required value"}},
		{name: "tls without either", obj: secret("kubernetes.io/tls", map[string][]byte{"cert": []byte("c")}, nil),
			errors: []string{"data[tls.crt]: Required value", "data[tls.key]: Required value"}},
		{name: "basic-auth with a username only", obj: secret("kubernetes.io/basic-auth", map[string][]byte{"username": []byte("admin")}, nil)},
		{name: "basic-auth with an empty password only", obj: secret("kubernetes.io/basic-auth", nil, map[string]string{"password": ""})},
		{name: "basic-auth with neither", obj: secret("kubernetes.io/basic-auth", map[string][]byte{"user": []byte("admin")}, nil),
			errors: []string{"data[username]: Required value", "data[password]: Required value"}},
		{name: "ssh-auth", obj: secret("kubernetes.io/ssh-auth", map[string][]byte{"ssh-privatekey": []byte("-----BEGIN OPENSSH PRIVATE KEY-----")}, nil)},
		{name: "ssh-auth with an empty key", obj: secret("kubernetes.io/ssh-auth", map[string][]byte{"ssh-privatekey": {}}, nil),
			errors: []string{"data[ssh-privatekey]: Required value"}},
		{name: "ssh-auth without its key", obj: secret("kubernetes.io/ssh-auth", map[string][]byte{"id_rsa": []byte("k")}, nil),
			errors: []string{"data[ssh-privatekey]: Required value"}},
		{name: "a custom type takes any keys", obj: secret("example.com/anything", map[string][]byte{"x": []byte("y")}, nil)},
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

// TestSecretAndConfigMapUpdate: a Secret's type never changes (Kubernetes'
// "field is immutable" on field type, also when an update leaves type out
// and it is defaulted Opaque), and a Secret or ConfigMap made immutable
// keeps its data and stays immutable.
func TestSecretAndConfigMapUpdate(t *testing.T) {
	tlsSecret := func() v1.Object {
		return &v1.Secret{Metadata: &v1.ObjectMeta{Name: "web-tls", Namespace: "default"}, Type: "kubernetes.io/tls",
			Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
	}
	frozen := func() v1.Object {
		return &v1.Secret{Metadata: &v1.ObjectMeta{Name: "frozen", Namespace: "default"}, Immutable: true, Data: map[string][]byte{"a": []byte("1")}}
	}
	frozenCM := func() v1.Object {
		return &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "frozen", Namespace: "default"}, Immutable: true,
			Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {2}}}
	}
	plainCM := func() v1.Object {
		return &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "plain", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	}
	for _, tc := range []struct {
		name string
		old  func() v1.Object
		edit func(v1.Object)
		want []string // substrings; none: allowed
	}{
		{"tls data", tlsSecret, func(o v1.Object) { o.(*v1.Secret).Data["tls.crt"] = []byte("c2") }, nil},
		{"type changed", tlsSecret, func(o v1.Object) { o.(*v1.Secret).Type = "Opaque" },
			[]string{`Secret "web-tls" is invalid: type: Invalid value: "Opaque": field is immutable`}},
		{"type left out: defaulted Opaque", tlsSecret, func(o v1.Object) { o.(*v1.Secret).Type = "" },
			[]string{`type: Invalid value: "Opaque": field is immutable`}},
		{"immutable secret, labels", frozen, func(o v1.Object) { o.GetMetadata().Labels = map[string]string{"a": "b"} }, nil},
		{"immutable secret, data", frozen, func(o v1.Object) { o.(*v1.Secret).Data["a"] = []byte("2") },
			[]string{"data: Forbidden: field is immutable when `immutable` is set"}},
		{"immutable secret, stringData", frozen, func(o v1.Object) { o.(*v1.Secret).StringData = map[string]string{"b": "2"} },
			[]string{"data: Forbidden: field is immutable when `immutable` is set"}},
		{"immutable secret made mutable", frozen, func(o v1.Object) { o.(*v1.Secret).Immutable = false },
			[]string{"immutable: Forbidden: field is immutable when `immutable` is set"}},
		{"secret made immutable", tlsSecret, func(o v1.Object) { o.(*v1.Secret).Immutable = true }, nil},
		{"immutable configmap, data", frozenCM, func(o v1.Object) { o.(*v1.ConfigMap).Data["a"] = "2" },
			[]string{"data: Forbidden: field is immutable when `immutable` is set"}},
		{"immutable configmap, binaryData", frozenCM, func(o v1.Object) { o.(*v1.ConfigMap).BinaryData = nil },
			[]string{"binaryData: Forbidden: field is immutable when `immutable` is set"}},
		{"immutable configmap made mutable", frozenCM, func(o v1.Object) { o.(*v1.ConfigMap).Immutable = false },
			[]string{"immutable: Forbidden: field is immutable when `immutable` is set"}},
		{"configmap data", plainCM, func(o v1.Object) { o.(*v1.ConfigMap).Data["a"] = "2" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old()
			k, err := kinds.ForMessage(old)
			if err != nil {
				t.Fatal(err)
			}
			next := proto.Clone(old).(v1.Object)
			tc.edit(next)
			k.Default(old)
			k.Default(next)
			if got := validate(next); got != "" {
				t.Fatalf("the new object alone is invalid: %s", got)
			}
			err = k.ValidateUpdate(old, next).Err(k.Name, old.GetMetadata().GetName())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
