// env[].valueFrom.fileKeyRef (Kubernetes 1.34 EnvFiles): a key of an env
// file in one of the pod's emptyDir volumes, with Kubernetes' rules: the
// volume name, path and key are required; the path is relative without
// ".."; the key is printable ASCII but '=', at most 128 characters (the
// alpha's limit); the volume is an emptyDir of the pod.

package validation

import (
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// MaxFileKeyLength is the longest fileKeyRef key (Kubernetes' alpha limit).
const MaxFileKeyLength = 128

func fileKeyRef(errs *Errs, path string, r *v1.FileKeySelector) {
	if r.VolumeName == "" {
		errs.Add(path+".volumeName", "Required value")
	}
	if r.Path == "" {
		errs.Add(path+".path", "Required value")
	} else {
		filePath(errs, path+".path", r.Path, map[string]bool{})
	}
	switch {
	case r.Key == "":
		errs.Add(path+".key", "Required value")
	case len(r.Key) > MaxFileKeyLength:
		errs.Add(path+".key", "Too long: may not be more than %d bytes", MaxFileKeyLength)
	default:
		for _, ch := range r.Key {
			if ch < ' ' || ch > '~' || ch == '=' {
				errs.Add(path+".key", "Invalid value: %q: must consist of printable ASCII characters except '='", r.Key)
				break
			}
		}
	}
}

// fileKeyRefVolumes checks that each fileKeyRef names an emptyDir volume
// of the pod.
func fileKeyRefVolumes(errs *Errs, path string, s *v1.PodSpec) {
	kinds := map[string]bool{} // volume name -> is an emptyDir
	for _, v := range s.Volumes {
		kinds[v.Name] = v.EmptyDir != nil
	}
	check := func(cp string, c *v1.Container) {
		for i, e := range c.Env {
			r := e.GetValueFrom().GetFileKeyRef()
			if r == nil || r.VolumeName == "" {
				continue
			}
			fp := fmt.Sprintf("%s.env[%d].valueFrom.fileKeyRef.volumeName", cp, i)
			emptyDir, ok := kinds[r.VolumeName]
			switch {
			case !ok:
				errs.Add(fp, "Not found: %q", r.VolumeName)
			case !emptyDir:
				errs.Add(fp, "Invalid value: %q: must be an emptyDir volume", r.VolumeName)
			}
		}
	}
	for i, c := range s.InitContainers {
		check(fmt.Sprintf("%s.initContainers[%d]", path, i), c)
	}
	for i, c := range s.Containers {
		check(fmt.Sprintf("%s.containers[%d]", path, i), c)
	}
}
