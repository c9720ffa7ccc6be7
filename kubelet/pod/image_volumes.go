package pod

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Image volumes (volumes[].image, Kubernetes 1.33+): the runtime mounts an
// OCI image's root file system read-only in the containers that mount
// the volume (CRI Mount.image). Before such a container is created, the
// kubelet asks the runtime whether it can (runtime.ImageVolumes: the CRI
// backend on containerd 2.1+; not the native backend, not containerd
// 1.x, whose CRI would ignore the field) — if not, the container waits
// with CreateContainerConfigError and the runtime's reason — and then
// makes each volume's image present per the volume's pullPolicy with the
// same puller, back-off and events as container images (its waiting
// reasons, ErrImagePull, ImagePullBackOff, ErrImageNeverPull, become the
// container's). The mount names the image by its ID, as Kubernetes passes
// PullImage's image_ref. Mounts are read-only whatever
// volumeMounts[].readOnly says; a subPath mounts a directory of the image
// (the runtime fails the container if it does not exist).

// imageVolumes makes the images of the image volumes c mounts ready and
// returns the image to mount by volume name (nil when c mounts none), or
// why c has to wait.
func (r *syncRun) imageVolumes(ctx context.Context, c *v1.Container) (map[string]string, *waiting) {
	w, pod := r.w, r.in.pod
	byName := map[string]*v1.ImageVolumeSource{}
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.Image != nil {
			byName[v.Name] = v.Image
		}
	}
	var out map[string]string
	for _, vm := range c.VolumeMounts {
		src := byName[vm.Name]
		if src == nil {
			continue
		}
		if out == nil {
			if err := w.m.rt.ImageVolumes(ctx); err != nil {
				err = configErrorf("volume %q: %v", vm.Name, err)
				w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: %v", err)
				return nil, &waiting{Reason: ReasonCreateContainerConfigError, Message: err.Error(), Until: w.m.now().Add(configRetry)}
			}
			out = map[string]string{}
		}
		// The puller keys its back-off by container and image: a pseudo
		// container of the volume's image and policy.
		if wt := w.m.images.ensure(ctx, pod, &v1.Container{Name: c.Name, Image: src.Reference, ImagePullPolicy: src.PullPolicy}); wt != nil {
			return nil, wt
		}
		img := src.Reference
		if st, err := w.m.rt.ImageStatus(ctx, src.Reference); err == nil && st.ID != "" {
			img = st.ID
		}
		out[vm.Name] = img
	}
	return out, nil
}
