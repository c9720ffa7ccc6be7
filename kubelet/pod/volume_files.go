package pod

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// The payloads of the file-projecting volumes (configMap, secret,
// downwardAPI, projected), built as Kubernetes' volume plugins build them
// (MakePayload, CollectData) and written by writeVolumeFiles:
//
//   - configMap, secret: a file per key (or per item), mode the item's or
//     defaultMode; a missing object or key is an error unless optional
//     (then the files are left out);
//   - downwardAPI: a file per item, a pod field (labels and annotations as
//     sorted key="value" lines) or a container's resource divided by its
//     divisor, rounded up (limits default to the node's allocatable);
//   - projected: the sources' files together, in one directory;
//     serviceAccountToken a token of the pod's account bound to the pod,
//     from the TokenSource.

// TokenSource is implemented by Sources that can get service account
// tokens (the kubelet's token manager); without it, serviceAccountToken
// projections are refused.
type TokenSource interface {
	// ServiceAccountToken returns a token of the pod's service account
	// for audience (empty: the apiserver's), bound to the pod, valid for
	// about expirationSeconds; a cached one while it is fresh.
	ServiceAccountToken(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) ([]byte, error)
}

// volumeFiles builds the payload of a file-projecting volume. extra is
// or-ed into every file's mode (group read with an fsGroup).
func volumeFiles(ctx context.Context, cfg Config, src Sources, pod *v1.Pod, v *v1.Volume, extra fs.FileMode) (map[string]fileSpec, error) {
	out := map[string]fileSpec{}
	ns := pod.GetMetadata().GetNamespace()
	switch {
	case v.ConfigMap != nil:
		c := v.ConfigMap
		return out, configMapFiles(ctx, src, ns, c.Name, c.Items, c.Optional, modeOr(c.DefaultMode, 0o644)|extra, extra, out)
	case v.Secret != nil:
		s := v.Secret
		return out, secretFiles(ctx, src, ns, s.SecretName, s.Items, s.Optional, modeOr(s.DefaultMode, 0o644)|extra, extra, out)
	case v.DownwardApi != nil:
		d := v.DownwardApi
		return out, downwardFiles(cfg, pod, d.Items, modeOr(d.DefaultMode, 0o644)|extra, extra, out)
	case v.Projected != nil:
		p := v.Projected
		mode := modeOr(p.DefaultMode, 0o644) | extra
		for i, s := range p.Sources {
			var err error
			switch {
			case s.ConfigMap != nil:
				err = configMapFiles(ctx, src, ns, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, extra, out)
			case s.Secret != nil:
				err = secretFiles(ctx, src, ns, s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, extra, out)
			case s.DownwardApi != nil:
				err = downwardFiles(cfg, pod, s.DownwardApi.Items, mode, extra, out)
			case s.ServiceAccountToken != nil:
				err = tokenFile(ctx, src, pod, s.ServiceAccountToken, mode, out)
			default:
				err = configErrorf("projected source %d: no supported projection (configMap, secret, downwardAPI, serviceAccountToken)", i)
			}
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("volume %q: not a file volume", v.Name)
}

func modeOr(m *int32, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return fs.FileMode(*m) & 0o777
}

func configMapFiles(ctx context.Context, src Sources, ns, name string, items []*v1.KeyToPath, optional bool, mode, extra fs.FileMode, out map[string]fileSpec) error {
	cm, err := src.ConfigMap(ctx, ns, name)
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return nil
		}
		return sourceError("configmap", ns, name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("configmap", ns+"/"+name, data, items, optional, mode, extra, out)
}

func secretFiles(ctx context.Context, src Sources, ns, name string, items []*v1.KeyToPath, optional bool, mode, extra fs.FileMode, out map[string]fileSpec) error {
	sec, err := src.Secret(ctx, ns, name)
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return nil
		}
		return sourceError("secret", ns, name, err)
	}
	return keyFiles("secret", ns+"/"+name, sec.Data, items, optional, mode, extra, out)
}

// keyFiles adds a file per key of data, or per item.
func keyFiles(kind, name string, data map[string][]byte, items []*v1.KeyToPath, optional bool, mode, extra fs.FileMode, out map[string]fileSpec) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := addFile(out, k, v, mode); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return configErrorf("%s %q references non-existent key %q", kind, name, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)&0o777 | extra
		}
		if err := addFile(out, it.Path, v, m); err != nil {
			return err
		}
	}
	return nil
}

func addFile(out map[string]fileSpec, p string, data []byte, mode fs.FileMode) error {
	if _, dup := out[p]; dup {
		return configErrorf("file path %q: conflicting duplicate paths", p)
	}
	out[p] = fileSpec{data, mode}
	return nil
}

func downwardFiles(cfg Config, pod *v1.Pod, items []*v1.DownwardAPIVolumeFile, mode, extra fs.FileMode, out map[string]fileSpec) error {
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = volumeFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = resourceFieldValue(pod, it.ResourceFieldRef, "", cfg.allocatable())
		default:
			err = configErrorf("downwardAPI file %q: neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return err
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode)&0o777 | extra
		}
		if err := addFile(out, it.Path, []byte(v), m); err != nil {
			return err
		}
	}
	return nil
}

// volumeFieldValue is a downward API file's content (Kubernetes'
// fieldpath.ExtractFieldPathAsString for volumes).
func volumeFieldValue(pod *v1.Pod, fp string) (string, error) {
	m := pod.GetMetadata()
	switch fp {
	case "metadata.labels":
		return formatMap(m.GetLabels()), nil
	case "metadata.annotations":
		return formatMap(m.GetAnnotations()), nil
	}
	for prefix, values := range map[string]map[string]string{"metadata.labels": m.GetLabels(), "metadata.annotations": m.GetAnnotations()} {
		if k, ok := validation.SubscriptKey(fp, prefix); ok {
			return values[k], nil
		}
	}
	switch fp {
	case "metadata.name":
		return m.GetName(), nil
	case "metadata.namespace":
		return m.GetNamespace(), nil
	case "metadata.uid":
		return m.GetUid(), nil
	}
	return "", configErrorf("fieldRef %q: unsupported field path in a volume", fp)
}

// formatMap is Kubernetes' fieldpath.FormatMap: key="value" lines (Go
// quoting), sorted by key, no final newline.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// resourceFieldValue is a container's resource divided by the divisor,
// rounded up (Kubernetes' ExtractContainerResourceValue); a limit the
// container does not set is the node's allocatable. container names the
// container when r does not (env).
func resourceFieldValue(pod *v1.Pod, r *v1.ResourceFieldSelector, container string, allocatable map[string]string) (string, error) {
	name := r.ContainerName
	if name == "" {
		name = container
	}
	var c *v1.Container
	for _, list := range [][]*v1.Container{pod.GetSpec().GetContainers(), pod.GetSpec().GetInitContainers()} {
		for _, x := range list {
			if x.Name == name {
				c = x
			}
		}
	}
	if c == nil {
		return "", configErrorf("resourceFieldRef: container %q not found in the pod", name)
	}
	section, res, _ := strings.Cut(r.Resource, ".")
	var values map[string]string
	switch section {
	case "limits":
		values = c.GetResources().GetLimits()
	case "requests":
		values = c.GetResources().GetRequests()
	default:
		return "", configErrorf("resourceFieldRef: unsupported resource %q", r.Resource)
	}
	s, ok := values[res]
	if !ok && section == "limits" {
		s, ok = allocatable[res]
	}
	q := resource.New(0)
	if ok {
		var err error
		if q, err = resource.Parse(s); err != nil {
			return "", configErrorf("resourceFieldRef %s: %v", r.Resource, err)
		}
	}
	div := resource.New(1)
	if r.Divisor != "" && r.Divisor != "0" {
		var err error
		if div, err = resource.Parse(r.Divisor); err != nil || div.IsZero() {
			return "", configErrorf("resourceFieldRef %s: bad divisor %q", r.Resource, r.Divisor)
		}
	}
	if res == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(div.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(div.Value()))), 10), nil
}

func tokenFile(ctx context.Context, src Sources, pod *v1.Pod, t *v1.ServiceAccountTokenProjection, mode fs.FileMode, out map[string]fileSpec) error {
	ts, ok := src.(TokenSource)
	if !ok {
		return configErrorf("serviceAccountToken: this kubelet cannot request service account tokens")
	}
	exp := t.GetExpirationSeconds()
	if exp == 0 {
		exp = 3600
	}
	tok, err := ts.ServiceAccountToken(ctx, pod, t.Audience, exp)
	if err != nil {
		return fmt.Errorf("serviceAccountToken for service account %q: %w", pod.GetSpec().GetServiceAccountName(), err)
	}
	return addFile(out, t.Path, tok, mode)
}
