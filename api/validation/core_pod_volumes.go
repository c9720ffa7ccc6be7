// A pod's volumes (spec.volumes), with Kubernetes' rules and messages for
// the file-projecting sources: configMap, secret, downwardAPI and
// projected (configMap, secret, downwardAPI, serviceAccountToken). A
// file's path is relative and has no ".." element; modes are 0 to 0777;
// a projected volume's paths are unique across its sources.

package validation

import (
	"fmt"
	"path"
	"strings"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// fileModeErrorMsg is Kubernetes' text for a bad file mode.
const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

func volume(errs *Errs, path string, v *v1.Volume, seen map[string]bool) {
	DNSLabel(errs, path+".name", v.Name)
	if seen[v.Name] {
		errs.Add(path+".name", "%q is duplicated", v.Name)
	}
	seen[v.Name] = true
	n := 0
	if v.EmptyDir != nil {
		n++
		if v.EmptyDir.SizeLimit != "" {
			if _, err := resource.Parse(v.EmptyDir.SizeLimit); err != nil {
				errs.Add(path+".emptyDir.sizeLimit", "%v", err)
			}
		}
	}
	if v.HostPath != nil {
		n++
		if v.HostPath.Path == "" || v.HostPath.Path[0] != '/' {
			errs.Add(path+".hostPath.path", "must be an absolute path")
		}
	}
	if c := v.ConfigMap; c != nil {
		n++
		DNSSubdomain(errs, path+".configMap.name", c.Name)
		fileMode(errs, path+".configMap.defaultMode", c.DefaultMode)
		keyToPaths(errs, path+".configMap.items", c.Items, map[string]bool{})
	}
	if s := v.Secret; s != nil {
		n++
		DNSSubdomain(errs, path+".secret.secretName", s.SecretName)
		fileMode(errs, path+".secret.defaultMode", s.DefaultMode)
		keyToPaths(errs, path+".secret.items", s.Items, map[string]bool{})
	}
	if v.PersistentVolumeClaim != nil {
		n++
		DNSSubdomain(errs, path+".persistentVolumeClaim.claimName", v.PersistentVolumeClaim.ClaimName)
		if v.PersistentVolumeClaim.ReadOnly {
			errs.Add(path+".persistentVolumeClaim.readOnly", "not supported: mount it with volumeMounts[].readOnly")
		}
	}
	if d := v.DownwardApi; d != nil {
		n++
		fileMode(errs, path+".downwardAPI.defaultMode", d.DefaultMode)
		downwardAPIFiles(errs, path+".downwardAPI.items", d.Items, map[string]bool{})
	}
	if p := v.Projected; p != nil {
		n++
		projected(errs, path+".projected", p)
	}
	if im := v.Image; im != nil {
		n++
		// Kubernetes' validateImageVolumeSource. Its mounts are read-only
		// whatever volumeMounts[].readOnly says (the kubelet forces it, as
		// Kubernetes'), and may use a subPath (1.33+).
		if im.Reference == "" {
			errs.Add(path+".image.reference", "Required value")
		}
		if im.PullPolicy != "" {
			OneOf(errs, path+".image.pullPolicy", im.PullPolicy, "Always", "IfNotPresent", "Never")
		}
	}
	if n == 0 {
		errs.Add(path, "must specify a volume type: one of emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim or image (other types are not supported)")
	} else if n > 1 {
		errs.Add(path, "may not specify more than 1 volume type (found %d)", n)
	}
}

func projected(errs *Errs, path string, p *v1.ProjectedVolumeSource) {
	fileMode(errs, path+".defaultMode", p.DefaultMode)
	paths := map[string]bool{}
	for i, src := range p.Sources {
		sp := fmt.Sprintf("%s.sources[%d]", path, i)
		n := 0
		if s := src.Secret; s != nil {
			n++
			if s.Name == "" {
				errs.Add(sp+".secret.name", "Required value")
			} else {
				DNSSubdomain(errs, sp+".secret.name", s.Name)
			}
			keyToPaths(errs, sp+".secret.items", s.Items, paths)
		}
		if c := src.ConfigMap; c != nil {
			n++
			if c.Name == "" {
				errs.Add(sp+".configMap.name", "Required value")
			} else {
				DNSSubdomain(errs, sp+".configMap.name", c.Name)
			}
			keyToPaths(errs, sp+".configMap.items", c.Items, paths)
		}
		if d := src.DownwardApi; d != nil {
			n++
			downwardAPIFiles(errs, sp+".downwardAPI.items", d.Items, paths)
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			tp := sp + ".serviceAccountToken"
			if e := t.GetExpirationSeconds(); e < MinTokenExpirationSeconds {
				errs.Add(tp+".expirationSeconds", "Invalid value: %d: may not specify a duration less than 10 minutes", e)
			} else if e > MaxTokenExpirationSeconds {
				errs.Add(tp+".expirationSeconds", "Invalid value: %d: may not specify a duration larger than 2^32 seconds", e)
			}
			if t.Path == "" {
				errs.Add(tp+".path", "Required value")
			} else {
				filePath(errs, tp+".path", t.Path, paths)
			}
		}
		switch {
		case n == 0:
			errs.Add(sp, "Required value: must specify exactly 1 of configMap, secret, downwardAPI or serviceAccountToken (other projections are not supported)")
		case n > 1:
			errs.Add(sp, "Forbidden: may not specify more than 1 volume type per source")
		}
	}
}

// keyToPaths checks configMap and secret items; paths collects the file
// paths of one volume (duplicates are refused).
func keyToPaths(errs *Errs, path string, items []*v1.KeyToPath, paths map[string]bool) {
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if it.Key == "" {
			errs.Add(ip+".key", "Required value")
		}
		if it.Path == "" {
			errs.Add(ip+".path", "Required value")
		} else {
			filePath(errs, ip+".path", it.Path, paths)
		}
		fileMode(errs, ip+".mode", it.Mode)
	}
}

// downwardAPIFiles checks downward API items (a downwardAPI volume's or
// a projection's).
func downwardAPIFiles(errs *Errs, path string, items []*v1.DownwardAPIVolumeFile, paths map[string]bool) {
	for i, it := range items {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if it.Path == "" {
			errs.Add(ip+".path", "Required value")
		} else {
			filePath(errs, ip+".path", it.Path, paths)
		}
		fileMode(errs, ip+".mode", it.Mode)
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs.Add(ip, "Invalid value: fieldRef and resourceFieldRef can not be specified simultaneously")
		case it.FieldRef != nil:
			apiVersion(errs, ip+".fieldRef.apiVersion", it.FieldRef.ApiVersion)
			volumeFieldPath(errs, ip+".fieldRef.fieldPath", it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			resourceFieldRef(errs, ip+".resourceFieldRef", it.ResourceFieldRef, true)
		default:
			errs.Add(ip, "Required value: one of fieldRef and resourceFieldRef is required")
		}
	}
}

// volumeFieldPaths are the pod fields a downward API file may show
// (Kubernetes' validVolumeDownwardAPIFieldPathExpressions).
var volumeFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid"}

func volumeFieldPath(errs *Errs, path, fp string) { fieldPath(errs, path, fp, volumeFieldPaths) }

// envFieldPaths are the pod fields an env var's fieldRef may name besides
// one label or annotation (Kubernetes' validEnvDownwardAPIFieldPathExpressions).
var envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// fieldPath checks a downward API fieldPath: one of allowed, or one label
// or annotation as metadata.labels['<key>'] with a valid key.
func fieldPath(errs *Errs, path, fp string, allowed []string) {
	if fp == "" {
		errs.Add(path, "Required value")
		return
	}
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		if strings.HasPrefix(fp, prefix+"[") {
			key, ok := SubscriptKey(fp, prefix)
			if !ok {
				errs.Add(path, "Invalid value: %q: must be %s['<key>']", fp, prefix)
				return
			}
			QualifiedName(errs, path, key)
			return
		}
	}
	for _, ok := range allowed {
		if fp == ok {
			return
		}
	}
	errs.Add(path, "Unsupported value: %q: supported values: %q", fp, allowed)
}

// SubscriptKey parses `prefix['key']` (or double quotes) and returns key.
func SubscriptKey(fp, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fp, prefix+"[")
	if !ok || len(rest) < 3 || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	rest = rest[:len(rest)-1]
	q := rest[0]
	if (q != '\'' && q != '"') || rest[len(rest)-1] != q || len(rest) < 3 {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

func apiVersion(errs *Errs, path, v string) {
	if v != "" && v != "v1" {
		errs.Add(path, "Unsupported value: %q: supported values: \"v1\"", v)
	}
}

// resourceFieldResources are what resourceFieldRef may name.
var resourceFieldResources = []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"}

var (
	cpuDivisors    = []string{"1m", "1"}
	memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

// resourceFieldRef checks a resourceFieldRef; in a volume it must name
// its container (in env it defaults to the container itself).
func resourceFieldRef(errs *Errs, path string, r *v1.ResourceFieldSelector, inVolume bool) {
	if inVolume && r.ContainerName == "" {
		errs.Add(path+".containerName", "Required value")
	}
	found := false
	for _, ok := range resourceFieldResources {
		found = found || r.Resource == ok
	}
	if r.Resource == "" {
		errs.Add(path+".resource", "Required value")
		return
	}
	if !found {
		errs.Add(path+".resource", "Unsupported value: %q: supported values: %q", r.Resource, resourceFieldResources)
		return
	}
	if r.Divisor == "" || r.Divisor == "0" {
		return // unset: 1
	}
	q, err := resource.Parse(r.Divisor)
	if err != nil {
		errs.Add(path+".divisor", "%v", err)
		return
	}
	divisors, what := memoryDivisors, "memory"
	switch {
	case strings.HasSuffix(r.Resource, ".cpu"):
		divisors, what = cpuDivisors, "cpu"
	case strings.HasSuffix(r.Resource, ".ephemeral-storage"):
		what = "local ephemeral storage"
	}
	for _, d := range divisors {
		if dq, _ := resource.Parse(d); dq.Cmp(q) == 0 {
			return
		}
	}
	errs.Add(path+".divisor", "Invalid value: %q: only divisor's values %s are supported with the %s resource", r.Divisor, strings.Join(divisors, ", "), what)
}

// filePath checks a file's path in a volume (Kubernetes'
// validateLocalNonReversiblePath) and that no other file of the volume
// has it.
func filePath(errs *Errs, fp, p string, paths map[string]bool) {
	if path.IsAbs(p) {
		errs.Add(fp, "Invalid value: %q: must be a relative path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			errs.Add(fp, "Invalid value: %q: must not contain '..'", p)
			break
		}
	}
	if strings.HasPrefix(p, "..") {
		errs.Add(fp, "Invalid value: %q: must not start with '..'", p)
	}
	clean := path.Clean(p)
	if paths[clean] {
		errs.Add(fp, "Invalid value: %q: conflicting duplicate paths", p)
	}
	paths[clean] = true
}

func fileMode(errs *Errs, path string, m *int32) {
	if m != nil && (*m < 0 || *m > 0o777) {
		errs.Add(path, "Invalid value: %d: %s", *m, fileModeErrorMsg)
	}
}
