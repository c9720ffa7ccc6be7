package eviction

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Containers' local ephemeral storage limits (Kubernetes'
// podEphemeralStorageLimitEviction and
// containerEphemeralStorageLimitEviction, with its texts), checked in the
// same round as the emptyDir sizeLimits, after them, for each running pod
// that has a container with limits.ephemeral-storage:
//
//   - the pod: its usage — every running container's writable layer and
//     logs plus its emptyDir volumes on disk — over the pod's limit (the
//     sum of the app and sidecar containers' limits, or an init
//     container's if larger: Kubernetes' PodLimits) evicts it: "Pod
//     ephemeral local storage usage exceeds the total limit of containers
//     SIZE. ";
//   - a container: its logs, plus its writable layer unless the image
//     file system is a file system of its own (Kubernetes'
//     dedicatedImageFs), over its limit evicts the pod: "Container NAME
//     exceeded its local ephemeral storage limit \"SIZE\". ".
//
// The writable layer is what the runtime's snapshotter reports (CRI
// ContainerStats.writable_layer; the native backend asks the snapshotter
// itself): containerd's CRI refreshes it every 10 s, so an eviction can
// come that much after the write. Logs are the blocks of the files in
// the container's log directory (every attempt and rotated file).
// Exited containers are not counted (the runtime reports no stats for
// them); /etc/hosts and configMap volumes are not either.

// Signals of tugboat_kubelet_pressure_evictions_total for these
// evictions (Kubernetes' names).
const (
	SignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
	SignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
)

// ContainerStorage is a running container's local ephemeral storage
// use, in bytes.
type ContainerStorage struct {
	// RootFS is its writable layer, Logs its log files.
	RootFS, Logs int64
}

func podStorageMessage(size string) string {
	return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", size)
}

func containerStorageMessage(name, size string) string {
	return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", name, size)
}

// ephemeralLimit is a container's limits.ephemeral-storage (0 if none).
func ephemeralLimit(c *v1.Container) (resource.Quantity, string) {
	s := c.GetResources().GetLimits()["ephemeral-storage"]
	if s == "" {
		return resource.Quantity{}, ""
	}
	q, err := resource.Parse(s)
	if err != nil {
		return resource.Quantity{}, ""
	}
	return q, s
}

// podStorageLimit is Kubernetes' PodLimits for ephemeral-storage: the
// app and sidecar (restartPolicy Always) init containers' limits summed,
// or a regular init container's with the sidecars started before it, if
// larger; false if no container has one.
func podStorageLimit(p *v1.Pod) (resource.Quantity, bool) {
	var sum, sidecars, initMax resource.Quantity
	found := false
	for _, c := range p.GetSpec().GetInitContainers() {
		q, s := ephemeralLimit(c)
		found = found || s != ""
		if c.GetRestartPolicy() == "Always" {
			sidecars = sidecars.Add(q)
			continue
		}
		if t := sidecars.Add(q); t.Cmp(initMax) > 0 {
			initMax = t
		}
	}
	for _, c := range p.GetSpec().GetContainers() {
		q, s := ephemeralLimit(c)
		found = found || s != ""
		sum = sum.Add(q)
	}
	sum = sum.Add(sidecars)
	if initMax.Cmp(sum) > 0 {
		sum = initMax
	}
	return sum, found
}

// storageLimited: whether any of the pods has a container with
// limits.ephemeral-storage (else their usage is not even measured).
func storageLimited(pods []*v1.Pod) bool {
	for _, p := range pods {
		if _, ok := podStorageLimit(p); ok {
			return true
		}
	}
	return false
}

// storageOverLimit is the eviction message and signal for a pod over a
// local ephemeral storage limit ("" if it is not); usage is the pod's
// running containers' by name, emptyDir the host path of its emptyDir
// volumes.
func storageOverLimit(p *v1.Pod, usage map[string]ContainerStorage, dedicatedImageFS bool, emptyDir func(uid, volume string) string) (message, signal string) {
	limit, ok := podStorageLimit(p)
	if !ok {
		return "", ""
	}
	var total int64
	for _, u := range usage {
		total += u.RootFS + u.Logs
	}
	if emptyDir != nil {
		for _, v := range p.GetSpec().GetVolumes() {
			if e := v.GetEmptyDir(); e != nil && e.GetMedium() != "Memory" {
				n, _ := diskUsage(emptyDir(p.GetMetadata().GetUid(), v.GetName()), 0)
				total += n
			}
		}
	}
	if resource.New(total).Cmp(limit) > 0 {
		return podStorageMessage(limit.BytesString()), SignalEphemeralPodFsLimit
	}
	all := append(append([]*v1.Container{}, p.GetSpec().GetInitContainers()...), p.GetSpec().GetContainers()...)
	for _, c := range all {
		q, s := ephemeralLimit(c)
		u, running := usage[c.GetName()]
		if s == "" || q.IsZero() || !running {
			continue
		}
		used := u.Logs
		if !dedicatedImageFS {
			used += u.RootFS
		}
		if resource.New(used).Cmp(q) > 0 {
			return containerStorageMessage(c.GetName(), s), SignalEphemeralContainerFsLimit
		}
	}
	return "", ""
}

// dedicatedImageFS reports whether the image file system (imageFSDir) is
// another file system than the node's (rootDir): Kubernetes then leaves
// the writable layers out of the containers' limits.
func dedicatedImageFS(rootDir, imageFSDir string) bool {
	if rootDir == "" || imageFSDir == "" {
		return false
	}
	var a, b unix.Stat_t
	if unix.Stat(existingParent(rootDir), &a) != nil || unix.Stat(existingParent(imageFSDir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// storageLimitEviction evicts the running pods over a container or pod
// ephemeral-storage limit; true if it evicted any.
func (m *Manager) storageLimitEviction(ctx context.Context, pods []*v1.Pod) bool {
	if m.cfg.LocalStorage == nil || !storageLimited(pods) {
		return false
	}
	usage := m.cfg.LocalStorage(ctx)
	dedicated := dedicatedImageFS(m.cfg.RootDir, m.cfg.ImageFSDir)
	evicted := false
	for _, p := range pods {
		msg, signal := storageOverLimit(p, usage[p.GetMetadata().GetUid()], dedicated, m.cfg.EmptyDirPath)
		if msg == "" || !m.evict(p, msg, signal) {
			continue
		}
		evicted = true
		m.log.Warn("evicting a pod", "pod", p.GetMetadata().GetNamespace()+"/"+p.GetMetadata().GetName(), "reason", msg)
	}
	return evicted
}
