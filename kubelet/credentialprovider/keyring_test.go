package credentialprovider

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func jsonSecret(name, auths string) *v1.Secret {
	return &v1.Secret{Metadata: &v1.ObjectMeta{Name: name}, Type: SecretTypeDockerConfigJSON,
		Data: map[string][]byte{DockerConfigJSONKey: []byte(`{"auths":` + auths + `}`)}}
}

// TestLookup: Kubernetes' keyring matching rules, table by table.
func TestLookup(t *testing.T) {
	a := AuthConfig{Username: "a", Password: "pa"}
	b := AuthConfig{Username: "b", Password: "pb"}
	for _, tc := range []struct {
		name, auths, image string
		want               []AuthConfig
	}{
		{"host", `{"reg.example.com":{"username":"a","password":"pa"}}`, "reg.example.com/team/app", []AuthConfig{a}},
		{"scheme and /v2/ ignored", `{"https://reg.example.com/v2/":{"auth":"` + b64("a:pa") + `"}}`, "reg.example.com/team/app:v1", []AuthConfig{a}},
		{"auth wins over username", `{"reg.example.com":{"username":"x","password":"y","auth":"` + b64("a:pa") + `"}}`, "reg.example.com/app", []AuthConfig{a}},
		{"password with a colon", `{"reg.example.com":{"auth":"` + b64("a:p:a") + `"}}`, "reg.example.com/app", []AuthConfig{{Username: "a", Password: "p:a"}}},
		{"other host", `{"reg.example.com":{"username":"a","password":"pa"}}`, "other.example.com/app", nil},
		{"port must match", `{"reg.example.com:5000":{"username":"a","password":"pa"}}`, "reg.example.com/app", nil},
		{"port", `{"localhost:5000":{"username":"a","password":"pa"}}`, "localhost:5000/lab/busybox@sha256:abc", []AuthConfig{a}},
		{"no port in key, port in image", `{"reg.example.com":{"username":"a","password":"pa"}}`, "reg.example.com:5000/app", nil},
		{"path prefix", `{"reg.example.com/team":{"username":"a","password":"pa"}}`, "reg.example.com/team/app", []AuthConfig{a}},
		{"path not a prefix", `{"reg.example.com/team":{"username":"a","password":"pa"}}`, "reg.example.com/other/app", nil},
		{"wildcard", `{"*.example.com":{"username":"a","password":"pa"}}`, "reg.example.com/app", []AuthConfig{a}},
		{"wildcard is one part", `{"*.example.com":{"username":"a","password":"pa"}}`, "a.reg.example.com/app", nil},
		{"wildcard not the apex", `{"*.example.com":{"username":"a","password":"pa"}}`, "example.com/app", nil},
		{"more specific first", `{"reg.example.com":{"username":"a","password":"pa"},"reg.example.com/team":{"username":"b","password":"pb"}}`,
			"reg.example.com/team/app", []AuthConfig{b, a}},
		{"docker hub key", `{"https://index.docker.io/v1/":{"username":"a","password":"pa"}}`, "docker.io/library/busybox", []AuthConfig{a}},
		{"docker hub, user repository", `{"https://index.docker.io/v1/":{"username":"a","password":"pa"}}`, "someone/app", []AuthConfig{a}},
		{"docker hub key not for others", `{"https://index.docker.io/v1/":{"username":"a","password":"pa"}}`, "reg.example.com/app", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := FromSecrets([]*v1.Secret{jsonSecret("s", tc.auths)})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := k.Lookup(tc.image)
			if ok != (len(tc.want) > 0) || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup(%s) = %v %v, want %v", tc.image, got, ok, tc.want)
			}
		})
	}
}

// TestFromSecrets: several secrets add to one keyring in order; dockercfg
// too; other types and empty keys are skipped; one that does not parse
// is an error naming it.
func TestFromSecrets(t *testing.T) {
	cfg := &v1.Secret{Metadata: &v1.ObjectMeta{Name: "old"}, Type: SecretTypeDockercfg,
		Data: map[string][]byte{DockerConfigKey: []byte(`{"reg.example.com":{"auth":"` + b64("c:pc") + `"}}`)}}
	opaque := &v1.Secret{Metadata: &v1.ObjectMeta{Name: "opaque"}, Type: "Opaque",
		Data: map[string][]byte{DockerConfigJSONKey: []byte(`{"auths":{"reg.example.com":{"username":"o","password":"po"}}}`)}}
	k, err := FromSecrets([]*v1.Secret{jsonSecret("first", `{"reg.example.com":{"username":"a","password":"pa"}}`), opaque, cfg,
		{Metadata: &v1.ObjectMeta{Name: "empty"}, Type: SecretTypeDockerConfigJSON}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := k.Lookup("reg.example.com/app")
	if want := []AuthConfig{{"a", "pa"}, {"c", "pc"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []*v1.Secret{
		jsonSecret("broken", `{`),
		jsonSecret("badauth", `{"reg.example.com":{"auth":"`+b64("nocolon")+`"}}`),
		jsonSecret("notb64", `{"reg.example.com":{"auth":"!!!"}}`),
	} {
		if _, err := FromSecrets([]*v1.Secret{bad}); err == nil || !strings.Contains(err.Error(), `image pull secret "`+bad.Metadata.Name+`"`) {
			t.Errorf("secret %s: %v", bad.Metadata.Name, err)
		}
	}
	if _, err := FromSecrets([]*v1.Secret{jsonSecret("badauth", `{"r":{"auth":"`+b64("nocolon")+`"}}`)}); err == nil ||
		!strings.Contains(err.Error(), "must be formatted as base64(username:password)") {
		t.Errorf("auth without a colon: %v", err)
	}
}
