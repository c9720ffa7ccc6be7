package validation_test

import (
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestEnvFileKeyRefValidation(t *testing.T) {
	withRef := func(r *v1.FileKeySelector, vols ...*v1.Volume) func() v1.Object {
		return func() v1.Object {
			p := pod()
			p.Spec.Volumes = vols
			p.Spec.Containers[0].Env = []*v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FileKeyRef: r}}}
			return p
		}
	}
	scratch := &v1.Volume{Name: "config", EmptyDir: &v1.EmptyDirVolumeSource{}}
	host := &v1.Volume{Name: "host", HostPath: &v1.HostPathVolumeSource{Path: "/etc"}}
	const e0 = "spec.containers[0].env[0].valueFrom.fileKeyRef"
	runValidation(t, []validationCase{
		{"valid", withRef(&v1.FileKeySelector{VolumeName: "config", Path: "app/config.env", Key: "DB_HOST"}, scratch), nil},
		{"key with printable punctuation", withRef(&v1.FileKeySelector{VolumeName: "config", Path: "c.env", Key: "my key.1-x", Optional: true}, scratch), nil},
		{"required fields", withRef(&v1.FileKeySelector{}, scratch),
			[]string{e0 + ".volumeName: Required value", e0 + ".path: Required value", e0 + ".key: Required value"}},
		{"absolute path", withRef(&v1.FileKeySelector{VolumeName: "config", Path: "/etc/c.env", Key: "K"}, scratch),
			[]string{e0 + `.path: Invalid value: "/etc/c.env": must be a relative path`}},
		{"path with ..", withRef(&v1.FileKeySelector{VolumeName: "config", Path: "a/../../c.env", Key: "K"}, scratch),
			[]string{e0 + `.path: Invalid value: "a/../../c.env": must not contain '..'`}},
		{"key with =", withRef(&v1.FileKeySelector{VolumeName: "config", Path: "c.env", Key: "A=B"}, scratch),
			[]string{e0 + `.key: Invalid value: "A=B": must consist of printable ASCII characters except '='`}},
		{"key too long", withRef(&v1.FileKeySelector{VolumeName: "config", Path: "c.env", Key: strings.Repeat("K", 129)}, scratch),
			[]string{e0 + ".key: Too long: may not be more than 128 bytes"}},
		{"no such volume", withRef(&v1.FileKeySelector{VolumeName: "nope", Path: "c.env", Key: "K"}, scratch),
			[]string{e0 + `.volumeName: Not found: "nope"`}},
		{"not an emptyDir", withRef(&v1.FileKeySelector{VolumeName: "host", Path: "c.env", Key: "K"}, host),
			[]string{e0 + `.volumeName: Invalid value: "host": must be an emptyDir volume`}},
	})
}
