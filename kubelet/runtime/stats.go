package runtime

import "time"

// ContainerStats is a running container's cgroup usage.
type ContainerStats struct {
	Timestamp time.Time
	// CPUUsageNanos is the cumulative CPU time used, in nanoseconds.
	CPUUsageNanos uint64
	// MemoryUsageBytes is the cgroup's memory usage, page cache included;
	// MemoryWorkingSetBytes excludes inactive file pages (what the OOM
	// killer and `top` care about).
	MemoryUsageBytes      uint64
	MemoryWorkingSetBytes uint64
	// WritableLayerBytes is what the container's writable layer (its
	// snapshot's upper directory) uses on the image file system, as the
	// snapshotter measures it (CRI ContainerStats.writable_layer).
	WritableLayerBytes uint64
}

// VersionInfo names the runtime, for nodeInfo.containerRuntimeVersion
// ("containerd://1.6.20").
type VersionInfo struct {
	RuntimeName    string
	RuntimeVersion string
	Revision       string
}

// String is "name://version", as Kubernetes shows it.
func (v VersionInfo) String() string { return v.RuntimeName + "://" + v.RuntimeVersion }
