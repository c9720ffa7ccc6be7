package volume

import (
	"context"
	"fmt"
	"path"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/controllers/controller"
)

// A released local-path volume with reclaim policy Delete is deleted with
// its folder, as k3s' local-path provisioner does: a helper pod on the
// volume's node (kube-system/helper-<volume>, labelled HelperLabel) mounts
// the parent folder and removes the volume's; once it has Succeeded the
// volume and the pod are deleted (event VolumeDelete). A helper that
// fails leaves the volume Failed with the helper's message (event
// VolumeFailedDelete), for an admin to look at.
//
// A node that is gone (its Node object deleted: missing from the cache
// and from the API) cannot run the helper, which would stay Pending
// forever. The controller then gives up for now, as the local
// provisioners do rather than wait on an unschedulable pod: it deletes
// the helper if one was made, records a Warning VolumeFailedDelete event
// and leaves the volume Failed with reason NodeNotFound and a message
// naming the node and the folder left behind. The volume is kept (the
// folder may still be on the node's disk): when a node of that name
// registers again the volume is synced again and a new helper removes
// the folder. An admin sure the node will never come back deletes the
// volume by hand. A node that is only NotReady is not gone: the helper
// stays Pending until its kubelet is back, as any pod bound there.

// NodeNotFoundReason is a Failed volume's status.reason while its node is
// gone; such a volume is reclaimed again once the node is back.
const NodeNotFoundReason = "NodeNotFound"

// HelperLabel marks a local-path helper pod with its volume's name.
const HelperLabel = "tugboat.io/local-path-helper"

// helperNamespace holds the helper pods.
const helperNamespace = "kube-system"

func helperName(pv string) string { return "helper-" + pv }

// isLocalPath reports whether the built-in provisioner made pv.
func isLocalPath(pv *v1.PersistentVolume) bool {
	return pv.GetMetadata().GetAnnotations()["pv.kubernetes.io/provisioned-by"] == validation.LocalPathProvisioner && pv.GetSpec().GetLocal() != nil
}

// volumeNode is the node a local volume's node affinity names.
func volumeNode(pv *v1.PersistentVolume) string {
	for _, t := range pv.GetSpec().GetNodeAffinity().GetRequired().GetNodeSelectorTerms() {
		for _, r := range append(t.GetMatchFields(), t.GetMatchExpressions()...) {
			if (r.GetKey() == "metadata.name" || r.GetKey() == "kubernetes.io/hostname") && r.GetOperator() == "In" && len(r.GetValues()) == 1 {
				return r.GetValues()[0]
			}
		}
	}
	return ""
}

// deleteLocalPath runs (or follows) the helper pod of a released
// local-path volume.
func (c *Controller) deleteLocalPath(ctx context.Context, pv *v1.PersistentVolume) error {
	name := pv.GetMetadata().GetName()
	dir := pv.GetSpec().GetLocal().GetPath()
	node := volumeNode(pv)
	if dir != path.Clean(dir) || !path.IsAbs(dir) || !strings.HasPrefix(path.Base(dir), "pvc-") || node == "" {
		// Not a folder this provisioner made: never remove it.
		c.events.Eventf(pv, controller.Warning, "VolumeFailedDelete", "not deleting volume %s: path %q on node %q is not a local-path folder", name, dir, node)
		return c.volumeFailed(ctx, pv, fmt.Sprintf("path %q on node %q is not a local-path folder", dir, node))
	}
	pod, ok := c.pods.Get(helperNamespace + "/" + helperName(name))
	if phase := pod.GetStatus().GetPhase(); !ok || phase != "Succeeded" && phase != "Failed" {
		n, err := c.node(ctx, node)
		if err != nil {
			return err
		}
		if n == nil {
			return c.volumeNodeGone(ctx, pv, pod, node, dir)
		}
	}
	if !ok {
		_, err := c.podAPI.Create(ctx, helperPod(pv, c.cfg.HelperImage, node, dir))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err == nil {
			c.log.Info("removing a released volume's folder", "volume", name, "node", node, "path", dir)
		}
		return nil // the helper's status changes requeue the volume
	}
	switch pod.GetStatus().GetPhase() {
	case "Succeeded":
		_, err := c.pvAPI.Delete(ctx, "", name, client.DeleteOptions{ResourceVersion: pv.GetMetadata().GetResourceVersion()})
		if err != nil {
			return ignoreNotFound(err)
		}
		r := pv.GetSpec().GetClaimRef()
		c.events.Eventf(pv, controller.Normal, "VolumeDelete", "deleted volume %s and its folder %s on node %s: its claim %s/%s is gone (reclaim policy Delete)", name, dir, node, r.GetNamespace(), r.GetName())
		return c.deleteHelper(ctx, pod)
	case "Failed":
		msg := helperFailure(pod)
		c.events.Eventf(pv, controller.Warning, "VolumeFailedDelete", "removing folder %s on node %s failed: %s", dir, node, msg)
		if err := c.volumeFailed(ctx, pv, "removing folder "+dir+" on node "+node+" failed: "+msg); err != nil {
			return err
		}
		return c.deleteHelper(ctx, pod)
	}
	return nil
}

// volumeNodeGone gives up removing a volume's folder while its node is
// gone: the helper (which no kubelet will run) is deleted and the volume
// is Failed with NodeNotFoundReason, once (a repeated sync writes and
// records nothing new).
func (c *Controller) volumeNodeGone(ctx context.Context, pv *v1.PersistentVolume, helper *v1.Pod, node, dir string) error {
	if helper != nil {
		// No kubelet will confirm a graceful delete: at once, as
		// Kubernetes' pod GC deletes the pods of a node that is gone.
		_, err := c.podAPI.Delete(ctx, helper.GetMetadata().GetNamespace(), helper.GetMetadata().GetName(), client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)})
		if err := ignoreNotFound(err); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("node %q not found: the folder %s was not removed; the volume is reclaimed once the node is back", node, dir)
	if st := pv.GetStatus(); st.GetPhase() == "Failed" && st.GetReason() == NodeNotFoundReason && st.GetMessage() == msg {
		return nil
	}
	c.events.Eventf(pv, controller.Warning, "VolumeFailedDelete", "%s", msg)
	c.log.Warn("a released volume's node is gone", "volume", pv.GetMetadata().GetName(), "node", node, "path", dir)
	next := proto.Clone(pv).(*v1.PersistentVolume)
	next.Status = &v1.PersistentVolumeStatus{Phase: "Failed", Reason: NodeNotFoundReason, Message: msg}
	_, err := c.pvAPI.UpdateStatus(ctx, next)
	return err
}

// volumesOnNode enqueues the volumes whose node affinity names node and
// the unbound claims whose selected node it is: a node that registers
// again lets a volume Failed with NodeNotFoundReason be reclaimed; a node
// that goes frees a helper pod waiting there and a claim waiting to be
// provisioned there.
func (c *Controller) volumesOnNode(node string) {
	for _, pv := range c.pvs.List() {
		if volumeNode(pv) == node {
			c.loop.Enqueue("volume/" + pv.GetMetadata().GetName())
		}
	}
	for _, pvc := range c.pvcs.List() {
		if pvc.GetSpec().GetVolumeName() == "" && pvc.GetMetadata().GetAnnotations()[SelectedNodeAnnotation] == node {
			c.loop.Enqueue("claim/" + v1.Key(pvc))
		}
	}
}

// node is the named node, or nil if it is gone: missing from the cache
// and from the API (the cache may lag behind a node that just
// registered).
func (c *Controller) node(ctx context.Context, name string) (*v1.Node, error) {
	if n, ok := c.nodes.Get(name); ok {
		return n, nil
	}
	n, err := c.nodeAPI.Get(ctx, "", name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return n, err
}

// selectedNodeGone drops the selection of a node that went before the
// claim's volume was made there (as Kubernetes' external provisioner
// does when the selected node is not found), with an Event: the scheduler
// selects a node again when it places the claim's pod anew.
func (c *Controller) selectedNodeGone(ctx context.Context, pvc *v1.PersistentVolumeClaim, node string) error {
	c.events.Eventf(pvc, controller.Warning, "ProvisioningFailed", "failed to get target node: node %q not found; the node selection is removed so that the scheduler selects another", node)
	_, err := c.pvcAPI.Mutate(ctx, pvc.GetMetadata().GetNamespace(), pvc.GetMetadata().GetName(), false, func(cur *v1.PersistentVolumeClaim) error {
		if cur.GetMetadata().GetUid() != pvc.GetMetadata().GetUid() || cur.GetSpec().GetVolumeName() != "" {
			return nil
		}
		if cur.GetMetadata().GetAnnotations()[SelectedNodeAnnotation] == node {
			delete(cur.Metadata.Annotations, SelectedNodeAnnotation)
		}
		return nil
	})
	return ignoreNotFound(err)
}

func (c *Controller) deleteHelper(ctx context.Context, pod *v1.Pod) error {
	_, err := c.podAPI.Delete(ctx, pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName(), client.DeleteOptions{})
	return ignoreNotFound(err)
}

// helperFailure says why a helper pod failed.
func helperFailure(pod *v1.Pod) string {
	for _, s := range pod.GetStatus().GetContainerStatuses() {
		if t := s.GetState().GetTerminated(); t != nil {
			return fmt.Sprintf("helper pod %s exited with %d: %s %s", pod.GetMetadata().GetName(), t.GetExitCode(), t.GetReason(), t.GetMessage())
		}
	}
	return fmt.Sprintf("helper pod %s failed: %s %s", pod.GetMetadata().GetName(), pod.GetStatus().GetReason(), pod.GetStatus().GetMessage())
}

func (c *Controller) volumeFailed(ctx context.Context, pv *v1.PersistentVolume, msg string) error {
	next := proto.Clone(pv).(*v1.PersistentVolume)
	next.Status = &v1.PersistentVolumeStatus{Phase: "Failed", Message: msg}
	_, err := c.pvAPI.UpdateStatus(ctx, next)
	return err
}

// helperPod removes dir on node: it mounts dir's parent and runs rm -rf
// on dir's base name, tolerating every taint.
func helperPod(pv *v1.PersistentVolume, image, node, dir string) *v1.Pod {
	name := pv.GetMetadata().GetName()
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Namespace: helperNamespace, Name: helperName(name), Labels: map[string]string{HelperLabel: name}},
		Spec: &v1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 "Never",
			TerminationGracePeriodSeconds: proto.Int64(1),
			Tolerations:                   []*v1.Toleration{{Operator: "Exists"}},
			Volumes:                       []*v1.Volume{{Name: "data", HostPath: &v1.HostPathVolumeSource{Path: path.Dir(dir), Type: "DirectoryOrCreate"}}},
			Containers: []*v1.Container{{Name: "helper", Image: image, ImagePullPolicy: "IfNotPresent",
				Command:      []string{"rm", "-rf", "/data/" + path.Base(dir)},
				VolumeMounts: []*v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		},
	}
}
