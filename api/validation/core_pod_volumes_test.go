package validation_test

import (
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// volumePod decodes a pod whose spec.volumes is vols (YAML, as users
// write it) and whose container mounts nothing.
func volumePod(t *testing.T, vols string) *v1.Pod {
	t.Helper()
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36, resources: {limits: {cpu: 500m, memory: 64Mi}}}\n  volumes:\n" + indent(vols, "  ")
	objs, err := manifest.Decode("pod.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("decoding:\n%s\n%v", doc, err)
	}
	return objs[0].Object.(*v1.Pod)
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestPodVolumeValidation(t *testing.T) {
	const v0 = "spec.volumes[0]"
	cases := []struct {
		name, vols string
		errors     []string // none: valid
	}{
		{"configMap items and modes", `
- name: c
  configMap: {name: cfg, defaultMode: 0400, optional: true, items: [{key: a, path: dir/a, mode: 0600}, {key: b, path: b}]}`, nil},
		{"configMap absolute path", `
- name: c
  configMap: {name: cfg, items: [{key: a, path: /etc/a}]}`, []string{v0 + `.configMap.items[0].path: Invalid value: "/etc/a": must be a relative path`}},
		{"configMap path with ..", `
- name: c
  configMap: {name: cfg, items: [{key: a, path: x/../../a}]}`, []string{v0 + `.configMap.items[0].path: Invalid value: "x/../../a": must not contain '..'`}},
		{"configMap path starting with ..", `
- name: c
  configMap: {name: cfg, items: [{key: a, path: ..data}]}`, []string{v0 + `.configMap.items[0].path: Invalid value: "..data": must not start with '..'`}},
		{"configMap item key and path required", `
- name: c
  configMap: {name: cfg, items: [{mode: 0644}]}`, []string{v0 + ".configMap.items[0].key: Required value", v0 + ".configMap.items[0].path: Required value"}},
		{"configMap defaultMode too big", `
- name: c
  configMap: {name: cfg, defaultMode: 01000}`, []string{v0 + ".configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive"}},
		{"configMap duplicate item paths", `
- name: c
  configMap: {name: cfg, items: [{key: a, path: x}, {key: b, path: x}]}`, []string{v0 + `.configMap.items[1].path: Invalid value: "x": conflicting duplicate paths`}},
		{"secret item mode negative", `
- name: s
  secret: {secretName: tls, items: [{key: a, path: a, mode: -1}]}`, []string{v0 + ".secret.items[0].mode: Invalid value: -1: must be a number between 0 and 0777"}},
		{"secret optional and defaultMode", `
- name: s
  secret: {secretName: tls, defaultMode: 0440, optional: true}`, nil},
		{"downwardAPI every field", `
- name: d
  downwardAPI:
    defaultMode: 0444
    items:
    - {path: labels, fieldRef: {fieldPath: metadata.labels}}
    - {path: annotations, fieldRef: {apiVersion: v1, fieldPath: metadata.annotations}}
    - {path: name, fieldRef: {fieldPath: metadata.name}}
    - {path: ns, fieldRef: {fieldPath: metadata.namespace}}
    - {path: uid, fieldRef: {fieldPath: metadata.uid}, mode: 0400}
    - {path: tier, fieldRef: {fieldPath: "metadata.labels['tier']"}}
    - {path: cpu, resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1m}}
    - {path: mem, resourceFieldRef: {containerName: app, resource: requests.memory, divisor: 1Mi}}`, nil},
		{"downwardAPI unsupported field", `
- name: d
  downwardAPI: {items: [{path: ip, fieldRef: {fieldPath: status.podIP}}]}`, []string{v0 + `.downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP": supported values: ["metadata.name" "metadata.namespace" "metadata.labels" "metadata.annotations" "metadata.uid"]`}},
		{"downwardAPI bad subscript", `
- name: d
  downwardAPI: {items: [{path: t, fieldRef: {fieldPath: "metadata.labels[tier]"}}]}`, []string{v0 + `.downwardAPI.items[0].fieldRef.fieldPath: Invalid value: "metadata.labels[tier]": must be metadata.labels['<key>']`}},
		{"downwardAPI apiVersion", `
- name: d
  downwardAPI: {items: [{path: nm, fieldRef: {apiVersion: v2, fieldPath: metadata.name}}]}`, []string{v0 + `.downwardAPI.items[0].fieldRef.apiVersion: Unsupported value: "v2"`}},
		{"downwardAPI both refs", `
- name: d
  downwardAPI: {items: [{path: nm, fieldRef: {fieldPath: metadata.name}, resourceFieldRef: {containerName: app, resource: limits.cpu}}]}`, []string{v0 + ".downwardAPI.items[0]: Invalid value: fieldRef and resourceFieldRef can not be specified simultaneously"}},
		{"downwardAPI no ref", `
- name: d
  downwardAPI: {items: [{path: nm}]}`, []string{v0 + ".downwardAPI.items[0]: Required value: one of fieldRef and resourceFieldRef is required"}},
		{"downwardAPI path required", `
- name: d
  downwardAPI: {items: [{fieldRef: {fieldPath: metadata.name}}]}`, []string{v0 + ".downwardAPI.items[0].path: Required value"}},
		{"resourceFieldRef without container", `
- name: d
  downwardAPI: {items: [{path: c, resourceFieldRef: {resource: limits.cpu}}]}`, []string{v0 + ".downwardAPI.items[0].resourceFieldRef.containerName: Required value"}},
		{"resourceFieldRef unknown resource", `
- name: d
  downwardAPI: {items: [{path: c, resourceFieldRef: {containerName: app, resource: limits.gpu}}]}`, []string{v0 + `.downwardAPI.items[0].resourceFieldRef.resource: Unsupported value: "limits.gpu"`}},
		{"resourceFieldRef cpu divisor", `
- name: d
  downwardAPI: {items: [{path: c, resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1Mi}}]}`, []string{v0 + `.downwardAPI.items[0].resourceFieldRef.divisor: Invalid value: "1Mi": only divisor's values 1m, 1 are supported with the cpu resource`}},
		{"resourceFieldRef memory divisor", `
- name: d
  downwardAPI: {items: [{path: c, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 3Mi}}]}`, []string{v0 + `.downwardAPI.items[0].resourceFieldRef.divisor: Invalid value: "3Mi": only divisor's values 1, 1k, 1M`}},
		{"projected configMap secret downwardAPI", `
- name: p
  projected:
    defaultMode: 0440
    sources:
    - configMap: {name: cfg, items: [{key: a, path: a}]}
    - secret: {name: tls, optional: true}
    - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}`, nil},
		{"projected duplicate paths across sources", `
- name: p
  projected:
    sources:
    - configMap: {name: a, items: [{key: k, path: same}]}
    - secret: {name: b, items: [{key: k, path: same}]}`, []string{v0 + `.projected.sources[1].secret.items[0].path: Invalid value: "same": conflicting duplicate paths`}},
		{"projected two types in one source", `
- name: p
  projected: {sources: [{configMap: {name: a}, secret: {name: b}}]}`, []string{v0 + ".projected.sources[0]: Forbidden: may not specify more than 1 volume type per source"}},
		{"projected empty source", `
- name: p
  projected: {sources: [{}]}`, []string{v0 + ".projected.sources[0]: Required value: must specify exactly 1 of configMap, secret, downwardAPI or serviceAccountToken"}},
		{"projected names required", `
- name: p
  projected: {sources: [{configMap: {}}, {secret: {}}]}`, []string{v0 + ".projected.sources[0].configMap.name: Required value", v0 + ".projected.sources[1].secret.name: Required value"}},
		{"projected defaultMode", `
- name: p
  projected: {defaultMode: 0x1ff0, sources: [{configMap: {name: a}}]}`, []string{v0 + ".projected.defaultMode: Invalid value: 8176: must be a number between 0 and 0777"}},
		{"token", `
- name: p
  projected: {sources: [{serviceAccountToken: {path: token, audience: vault, expirationSeconds: 600}}, {serviceAccountToken: {path: other}}]}`, nil},
		{"token too short", `
- name: p
  projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 599}}]}`, []string{v0 + ".projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"}},
		{"token too long", `
- name: p
  projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 4294967297}}]}`, []string{v0 + ".projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"}},
		{"token path required", `
- name: p
  projected: {sources: [{serviceAccountToken: {audience: vault}}]}`, []string{v0 + ".projected.sources[0].serviceAccountToken.path: Required value"}},
		{"token path clashes", `
- name: p
  projected: {sources: [{serviceAccountToken: {path: token}}, {configMap: {name: a, items: [{key: k, path: token}]}}]}`, []string{v0 + `.projected.sources[1].configMap.items[0].path: Invalid value: "token": conflicting duplicate paths`}},
		{"image", `
- name: i
  image: {reference: tugboat.local/data:v1, pullPolicy: Never}`, nil},
		{"image reference required", `
- name: i
  image: {pullPolicy: IfNotPresent}`, []string{v0 + ".image.reference: Required value"}},
		{"image pullPolicy", `
- name: i
  image: {reference: data:v1, pullPolicy: Sometimes}`, []string{v0 + `.image.pullPolicy: "Sometimes" is not one of Always, IfNotPresent, Never`}},
		{"no volume type", `
- name: x`, []string{v0 + ": must specify a volume type"}},
		{"two volume types", `
- name: x
  emptyDir: {}
  downwardAPI: {items: []}`, []string{v0 + ": may not specify more than 1 volume type (found 2)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := validate(volumePod(t, c.vols))
			if len(c.errors) == 0 {
				if got != "" {
					t.Fatalf("want valid, got %s", got)
				}
				return
			}
			if got == "" {
				t.Fatalf("want errors %v, got none", c.errors)
			}
			for _, want := range c.errors {
				if !strings.Contains(got, want) {
					t.Errorf("error %q does not contain %q", got, want)
				}
			}
		})
	}
}

func TestEnvResourceFieldRefValidation(t *testing.T) {
	withEnv := func(e *v1.EnvVar) func() v1.Object {
		return func() v1.Object { p := pod(); p.Spec.Containers[0].Env = []*v1.EnvVar{e}; return p }
	}
	ref := func(r *v1.ResourceFieldSelector) *v1.EnvVar {
		return &v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: r}}
	}
	field := func(fp string) *v1.EnvVar {
		return &v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: fp}}}
	}
	const e0 = "spec.containers[0].env[0].valueFrom"
	runValidation(t, []validationCase{
		{"own container", withEnv(ref(&v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: "1Mi"})), nil},
		{"bad resource", withEnv(ref(&v1.ResourceFieldSelector{Resource: "limits.gpu"})), []string{e0 + `.resourceFieldRef.resource: Unsupported value: "limits.gpu"`}},
		{"fieldRef label", withEnv(field("metadata.labels['app.kubernetes.io/name']")), nil},
		{"fieldRef annotation", withEnv(field(`metadata.annotations["note"]`)), nil},
		{"fieldRef podIPs", withEnv(field("status.podIPs")), nil},
		{"fieldRef every label", withEnv(field("metadata.labels")), []string{e0 + `.fieldRef.fieldPath: Unsupported value: "metadata.labels": supported values:`}},
		{"fieldRef unquoted key", withEnv(field("metadata.labels[app]")), []string{e0 + `.fieldRef.fieldPath: Invalid value: "metadata.labels[app]": must be metadata.labels['<key>']`}},
		{"fieldRef bad key", withEnv(field("metadata.labels['-bad']")), []string{e0 + `.fieldRef.fieldPath: "-bad": name part must be`}},
		{"fieldRef unknown", withEnv(field("spec.hostname")), []string{e0 + `.fieldRef.fieldPath: Unsupported value: "spec.hostname"`}},
		{"two sources", withEnv(&v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{
			ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}, FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}),
			[]string{e0 + ": exactly one of configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef or fileKeyRef must be set"}},
	})
}

func TestPodVolumeDefaults(t *testing.T) {
	p := volumePod(t, `
- {name: c, configMap: {name: cfg}}
- {name: s, secret: {secretName: tls, defaultMode: 0400}}
- {name: d, downwardAPI: {items: [{path: nm, fieldRef: {fieldPath: metadata.name}}, {path: c, resourceFieldRef: {containerName: app, resource: limits.cpu}}]}}
- name: p
  projected:
    sources:
    - serviceAccountToken: {path: token}
    - serviceAccountToken: {path: other, expirationSeconds: 7200}
    - downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}
`)
	p.Spec.Containers[0].Env = []*v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	k, _ := kinds.ForMessage(p)
	k.Default(p)
	v := p.Spec.Volumes
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"configMap defaultMode", v[0].ConfigMap.GetDefaultMode(), int32(0o644)},
		{"secret defaultMode kept", v[1].Secret.GetDefaultMode(), int32(0o400)},
		{"downwardAPI defaultMode", v[2].DownwardApi.GetDefaultMode(), int32(0o644)},
		{"downwardAPI fieldRef apiVersion", v[2].DownwardApi.Items[0].FieldRef.ApiVersion, "v1"},
		{"resourceFieldRef divisor stays unset (means 1)", v[2].DownwardApi.Items[1].ResourceFieldRef.Divisor, ""},
		{"projected defaultMode", v[3].Projected.GetDefaultMode(), int32(0o644)},
		{"token expirationSeconds", v[3].Projected.Sources[0].ServiceAccountToken.GetExpirationSeconds(), int64(3600)},
		{"token expirationSeconds kept", v[3].Projected.Sources[1].ServiceAccountToken.GetExpirationSeconds(), int64(7200)},
		{"projected fieldRef apiVersion", v[3].Projected.Sources[2].DownwardApi.Items[0].FieldRef.ApiVersion, "v1"},
		{"env fieldRef apiVersion", p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.ApiVersion, "v1"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestImageVolumeDefaults: an image volume's pullPolicy defaults as a
// container's imagePullPolicy does (Kubernetes' SetDefaults_ImageVolumeSource).
func TestImageVolumeDefaults(t *testing.T) {
	for ref, want := range map[string]string{
		"data:v1": "IfNotPresent", "data": "Always", "data:latest": "Always",
		"registry:5000/data": "Always", "data@sha256:" + strings.Repeat("a", 64): "IfNotPresent",
	} {
		p := volumePod(t, "- name: i\n  image: {reference: \""+ref+"\"}")
		k, err := kinds.ForMessage(p)
		if err != nil {
			t.Fatal(err)
		}
		k.Default(p)
		if got := p.Spec.Volumes[0].Image.PullPolicy; got != want {
			t.Errorf("%s: pullPolicy %q, want %q", ref, got, want)
		}
	}
}
