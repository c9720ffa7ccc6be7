package pod

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// The pod-level parts of a sandbox: the pod cgroup's limits from
// spec.resources, and the user namespace of a pod with hostUsers false.

// cpuPeriod is the CFS period the kubelet uses (100ms).
const cpuPeriod = 100000

// podCgroupResources is Kubernetes' pod cgroup config for pod-level
// resources (ResourceConfigForPod): cpu quota from the cpu limit, cpu
// shares from the cpu request, the memory limit; nil without pod-level
// resources.
func podCgroupResources(spec *v1.PodSpec) *runtime.PodResources {
	r := spec.GetResources()
	if !resource.HasPodLevelResources(spec) {
		return nil
	}
	out := &runtime.PodResources{}
	if v, ok := r.GetLimits()["cpu"]; ok {
		q, _ := resource.Parse(v)
		out.CPUQuota, out.CPUPeriod = milliCPUToQuota(q.MilliValue()), cpuPeriod
	}
	if v, ok := r.GetRequests()["cpu"]; ok {
		q, _ := resource.Parse(v)
		out.CPUShares = milliCPUToShares(q.MilliValue())
	}
	if v, ok := r.GetLimits()["memory"]; ok {
		q, _ := resource.Parse(v)
		out.MemoryLimit = q.Value()
	}
	if *out == (runtime.PodResources{}) {
		return nil
	}
	return out
}

// milliCPUToQuota is the kubelet's MilliCPUToQuota: at least 1ms a period.
func milliCPUToQuota(milli int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*cpuPeriod/1000, 1000)
}

// milliCPUToShares is the kubelet's MilliCPUToShares (2 to 262144).
func milliCPUToShares(milli int64) int64 {
	return min(max(milli*1024/1000, 2), 262144)
}

// User namespaces: each pod with hostUsers false gets 65536 IDs of its
// own (0-65535 in the pod), as Kubernetes' kubelet allocates them, from
// the kubelet's range (userns_mappings.go: the kubelet user's
// subordinate IDs, else node IDs 65536 up to 2³²), recorded in the pod's
// directory so that a restarted kubelet gives the pod the same range and
// knows which are taken.
const (
	usernsLength = 65536
	usernsFile   = "userns.json"
)

type usernsRecord struct {
	HostID uint32 `json:"hostID"`
	Length uint32 `json:"length"`
}

// usernsAllocator hands out the blocks of the range that starts at
// first; pods' directories are its state.
type usernsAllocator struct {
	mu      sync.Mutex
	podsDir string
	first   uint32 // the first node ID, a multiple of usernsLength
	blocks  uint32 // how many blocks of usernsLength the range holds
}

// allocate returns the pod's mappings, the recorded ones if it has them.
func (a *usernsAllocator) allocate(uid string) (*runtime.UserNamespace, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rec, err := readUserns(filepath.Join(a.podsDir, uid, usernsFile)); err == nil {
		return mappings(rec), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	used := map[uint32]bool{}
	entries, _ := os.ReadDir(a.podsDir)
	for _, e := range entries {
		if rec, err := readUserns(filepath.Join(a.podsDir, e.Name(), usernsFile)); err == nil {
			used[rec.HostID] = true
		}
	}
	for b := uint32(0); b < a.blocks; b++ {
		host := a.first + b*usernsLength
		if used[host] {
			continue
		}
		rec := usernsRecord{HostID: host, Length: usernsLength}
		dir := filepath.Join(a.podsDir, uid)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("user namespace: %w", err)
		}
		raw, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(dir, usernsFile), raw, 0o600); err != nil {
			return nil, fmt.Errorf("user namespace: %w", err)
		}
		return mappings(rec), nil
	}
	return nil, fmt.Errorf("user namespace: all %d ranges of %d IDs are in use on this node", a.blocks, usernsLength)
}

func readUserns(path string) (usernsRecord, error) {
	var rec usernsRecord
	raw, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Length != usernsLength || rec.HostID%usernsLength != 0 || rec.HostID == 0 {
		return rec, fmt.Errorf("user namespace record %s: not a valid record", path)
	}
	return rec, nil
}

func mappings(rec usernsRecord) *runtime.UserNamespace {
	m := []runtime.IDMapping{{HostID: rec.HostID, ContainerID: 0, Length: rec.Length}}
	return &runtime.UserNamespace{UIDs: m, GIDs: m}
}

// podUserNamespace is the pod's user namespace: nil unless hostUsers is
// false.
func (m *Manager) podUserNamespace(pod *v1.Pod) (*runtime.UserNamespace, error) {
	if pod.GetSpec().HostUsers == nil || pod.GetSpec().GetHostUsers() {
		return nil, nil
	}
	return m.userns.allocate(pod.GetMetadata().GetUid())
}
