package describe

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/allocation"
)

func describeNode(ctx context.Context, d *describer, n *v1.Node) error {
	m, sp, st := n.GetMetadata(), n.GetSpec(), n.GetStatus()
	d.kv(0, "Name", m.GetName())
	d.kv(0, "Roles", table.NodeRoles(n))
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	d.kv(0, "CreationTimestamp", timeString(m.GetCreationTimestamp()))
	if len(sp.GetTaints()) == 0 {
		d.kv(0, "Taints", "<none>")
	}
	for i, t := range sp.GetTaints() {
		key := "Taints:"
		if i > 0 {
			key = ""
		}
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		d.text(0, "%s\t%s:%s", key, s, t.Effect)
	}
	d.kv(0, "Unschedulable", sp.GetUnschedulable())
	if lease, err := client.For[*v1.Lease](d.c).Get(ctx, "kube-node-lease", m.GetName()); err == nil {
		d.text(0, "Lease:")
		d.kv(1, "HolderIdentity", cmp.Or(lease.GetSpec().GetHolderIdentity(), "<unset>"))
		d.kv(1, "AcquireTime", timeString(lease.GetSpec().GetAcquireTime()))
		d.kv(1, "RenewTime", timeString(lease.GetSpec().GetRenewTime()))
	}
	if conds := st.GetConditions(); len(conds) > 0 {
		d.text(0, "Conditions:")
		d.text(1, "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage")
		d.text(1, "----\t------\t-----------------\t------------------\t------\t-------")
		for _, c := range conds {
			d.text(1, "%s\t%s\t%s\t%s\t%s\t%s", c.Type, c.Status, timeString(c.LastHeartbeatTime), timeString(c.LastTransitionTime), c.Reason, c.Message)
		}
	}
	d.text(0, "Addresses:")
	for _, a := range st.GetAddresses() {
		d.kv(1, a.Type, a.Address)
	}
	if len(st.GetCapacity()) > 0 {
		d.text(0, "Capacity:")
		d.quantities(1, st.GetCapacity())
	}
	if len(st.GetAllocatable()) > 0 {
		d.text(0, "Allocatable:")
		d.quantities(1, st.GetAllocatable())
	}
	if info := st.GetNodeInfo(); info != nil {
		d.text(0, "System Info:")
		d.kv(1, "Machine ID", info.MachineId)
		d.kv(1, "Boot ID", info.BootId)
		d.kv(1, "Kernel Version", info.KernelVersion)
		d.kv(1, "OS Image", info.OsImage)
		d.kv(1, "Operating System", info.OperatingSystem)
		d.kv(1, "Architecture", info.Architecture)
		d.kv(1, "Container Runtime Version", info.ContainerRuntimeVersion)
		d.kv(1, "Kubelet Version", info.KubeletVersion)
	}
	if sp.GetPodCidr() != "" {
		d.kv(0, "PodCIDR", sp.GetPodCidr())
		d.kv(0, "PodCIDRs", strings.Join(sp.GetPodCidrs(), ","))
	}
	pods, _, err := client.For[*v1.Pod](d.c).List(ctx, client.ListOptions{FieldSelector: "spec.nodeName=" + m.GetName()})
	if err != nil {
		return err
	}
	d.nodePods(n, pods)
	return d.events(ctx, n)
}

// nodePods writes the node's non-terminated pods with their requests and
// limits, each as a share of the node's allocatable, then the totals
// (kubectl's "Allocated resources").
func (d *describer) nodePods(n *v1.Node, pods []*v1.Pod) {
	cpuAlloc, memAlloc := allocation.Allocatable(n)
	var running []*v1.Pod
	for _, p := range pods {
		if ph := p.GetStatus().GetPhase(); ph != "Succeeded" && ph != "Failed" {
			running = append(running, p)
		}
	}
	d.kv(0, "Non-terminated Pods", fmt.Sprintf("(%d in total)", len(running)))
	var total allocation.Resources
	if len(running) > 0 {
		d.text(1, "Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge")
		d.text(1, "---------\t----\t------------\t----------\t---------------\t-------------\t---")
		for _, p := range running {
			r := allocation.Pod(p)
			total.Add(r)
			d.text(1, "%s\t%s\t%s\t%s\t%s\t%s\t%s", p.Metadata.Namespace, p.Metadata.Name,
				allocation.WithPercent(allocation.CPU(r.CPURequest), r.CPURequest, cpuAlloc), allocation.WithPercent(allocation.CPU(r.CPULimit), r.CPULimit, cpuAlloc),
				allocation.WithPercent(allocation.Memory(r.MemoryRequest), r.MemoryRequest, memAlloc), allocation.WithPercent(allocation.Memory(r.MemoryLimit), r.MemoryLimit, memAlloc),
				table.Age(p.Metadata.CreationTimestamp, d.now))
		}
	}
	d.text(0, "Allocated resources:")
	d.text(1, "(Total limits may be over 100 percent, i.e., overcommitted.)")
	d.text(1, "Resource\tRequests\tLimits")
	d.text(1, "--------\t--------\t------")
	d.text(1, "cpu\t%s\t%s", allocation.WithPercent(allocation.CPU(total.CPURequest), total.CPURequest, cpuAlloc), allocation.WithPercent(allocation.CPU(total.CPULimit), total.CPULimit, cpuAlloc))
	d.text(1, "memory\t%s\t%s", allocation.WithPercent(allocation.Memory(total.MemoryRequest), total.MemoryRequest, memAlloc), allocation.WithPercent(allocation.Memory(total.MemoryLimit), total.MemoryLimit, memAlloc))
}
