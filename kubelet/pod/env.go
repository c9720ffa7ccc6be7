package pod

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// configError is a container config that cannot be built yet (a missing
// ConfigMap or Secret, a bad field reference): the container waits with
// reason CreateContainerConfigError and is retried.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// podFields are the values the downward API (env fieldRef) exposes.
type podFields struct {
	podIP, hostIP string
	// allocatable is the node's (resourceFieldRef to an unset limit).
	allocatable map[string]string
	// emptyDir is the node's directory of the pod's emptyDir volume
	// (fileKeyRef); nil: none.
	emptyDir func(volume string) string
}

// isEmptyDir reports whether the pod has an emptyDir volume of that name.
func isEmptyDir(pod *v1.Pod, name string) bool {
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.Name == name {
			return v.EmptyDir != nil
		}
	}
	return false
}

var envNameRE = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// containerEnv resolves a container's environment as Kubernetes does:
// envFrom sources first (in order, with their prefix), then env entries
// (later ones win), then the Service variables the container did not set
// itself; values may refer to earlier variables and Service variables as
// $(NAME).
func containerEnv(ctx context.Context, src Sources, pod *v1.Pod, c *v1.Container, f podFields) ([]runtime.EnvVar, error) {
	ns := pod.GetMetadata().GetNamespace()
	services, err := src.Services()
	if err != nil {
		return nil, configErrorf("service environment variables: %v", err)
	}
	svcEnv := serviceEnv(pod, services)
	var out []runtime.EnvVar
	index := map[string]int{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i].Value = value
			return
		}
		index[name] = len(out)
		out = append(out, runtime.EnvVar{Name: name, Value: value})
	}
	lookup := func(name string) (string, bool) {
		if i, ok := index[name]; ok {
			return out[i].Value, true
		}
		v, ok := svcEnv[name]
		return v, ok
	}

	for _, from := range c.EnvFrom {
		data, err := envFromData(ctx, src, ns, from)
		if err != nil {
			return nil, err
		}
		for _, k := range sortedKeys(data) {
			name := from.Prefix + k
			if !envNameRE.MatchString(name) {
				continue // Kubernetes skips invalid names (and says so in an event)
			}
			set(name, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, lookup))
			continue
		}
		v, ok, err := envValueFrom(ctx, src, pod, c, e, f)
		if err != nil {
			return nil, err
		}
		if ok {
			set(e.Name, v)
		}
	}
	for _, k := range sortedKeys(svcEnv) {
		if _, ok := index[k]; !ok {
			set(k, svcEnv[k])
		}
	}
	return out, nil
}

func envFromData(ctx context.Context, src Sources, ns string, from *v1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(ctx, ns, from.ConfigMapRef.Name)
		if err != nil {
			return nil, sourceError("configmap", ns, from.ConfigMapRef.Name, err)
		}
		return configMapData(cm), nil
	case from.SecretRef != nil:
		s, err := src.Secret(ctx, ns, from.SecretRef.Name)
		if err != nil {
			return nil, sourceError("secret", ns, from.SecretRef.Name, err)
		}
		out := map[string]string{}
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	return nil, nil
}

func configMapData(cm *v1.ConfigMap) map[string]string {
	out := map[string]string{}
	for k, v := range cm.Data {
		out[k] = v
	}
	for k, v := range cm.BinaryData {
		out[k] = string(v)
	}
	return out
}

func sourceError(kind, ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return configErrorf("%s %q not found", kind, ns+"/"+name)
	}
	return configErrorf("reading %s %q: %v", kind, ns+"/"+name, err)
}

// envValueFrom resolves one valueFrom; ok is false for an optional key
// that is missing.
func envValueFrom(ctx context.Context, src Sources, pod *v1.Pod, c *v1.Container, e *v1.EnvVar, f podFields) (string, bool, error) {
	ns := pod.GetMetadata().GetNamespace()
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		v, err := fieldValue(pod, vf.FieldRef.FieldPath, f)
		if err != nil {
			return "", false, configErrorf("env %s: %v", e.Name, err)
		}
		return v, true, nil
	case vf.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, vf.ResourceFieldRef, c.Name, f.allocatable)
		if err != nil {
			return "", false, configErrorf("env %s: %v", e.Name, err)
		}
		return v, true, nil
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := src.ConfigMap(ctx, ns, ref.Name)
		if err != nil {
			if ref.Optional && apierrors.IsNotFound(err) {
				return "", false, nil
			}
			return "", false, sourceError("configmap", ns, ref.Name, err)
		}
		v, ok := configMapData(cm)[ref.Key]
		if !ok {
			if ref.Optional {
				return "", false, nil
			}
			return "", false, configErrorf("env %s: configmap %q has no key %q", e.Name, ns+"/"+ref.Name, ref.Key)
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := src.Secret(ctx, ns, ref.Name)
		if err != nil {
			if ref.Optional && apierrors.IsNotFound(err) {
				return "", false, nil
			}
			return "", false, sourceError("secret", ns, ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if ref.Optional {
				return "", false, nil
			}
			return "", false, configErrorf("env %s: secret %q has no key %q", e.Name, ns+"/"+ref.Name, ref.Key)
		}
		return string(v), true, nil
	case vf.FileKeyRef != nil:
		dir := ""
		if f.emptyDir != nil && isEmptyDir(pod, vf.FileKeyRef.VolumeName) {
			dir = f.emptyDir(vf.FileKeyRef.VolumeName)
		}
		return fileKeyValue(e, vf.FileKeyRef, dir)
	}
	return "", false, configErrorf("env %s: valueFrom names no source", e.Name)
}

// fieldValue implements the downward API's field paths.
func fieldValue(pod *v1.Pod, path string, f podFields) (string, error) {
	m := pod.GetMetadata()
	if k, ok := validation.SubscriptKey(path, "metadata.labels"); ok {
		return m.GetLabels()[k], nil
	}
	if k, ok := validation.SubscriptKey(path, "metadata.annotations"); ok {
		return m.GetAnnotations()[k], nil
	}
	switch path {
	case "metadata.name":
		return m.GetName(), nil
	case "metadata.namespace":
		return m.GetNamespace(), nil
	case "metadata.uid":
		return m.GetUid(), nil
	case "spec.nodeName":
		return pod.GetSpec().GetNodeName(), nil
	case "spec.serviceAccountName":
		return pod.GetSpec().GetServiceAccountName(), nil
	case "status.podIP", "status.podIPs":
		return f.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return f.hostIP, nil
	}
	return "", fmt.Errorf("fieldRef %q: unsupported field path", path)
}

// expand replaces $(NAME) with NAME's value when lookup knows it, leaves
// unknown references as they are, and turns $$ into $ — Kubernetes'
// rules for env values, command and args.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(in []string, env []runtime.EnvVar) []string {
	if len(in) == 0 {
		return nil
	}
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	lookup := func(n string) (string, bool) { v, ok := m[n]; return v, ok }
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, lookup)
	}
	return out
}
