package tugctl

import (
	"fmt"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// podResources are a pod's cpu (millicores) and memory (bytes) requests
// and limits, as the scheduler counts them: the sum over its containers,
// or the largest init container's when that is more. A container without
// a limit makes the pod's limit of that resource unbounded (0 here: the
// column prints 0, as kubectl's does).
type podResources struct {
	cpuReq, memReq, cpuLim, memLim int64
}

func resourcesOf(p *v1.Pod) podResources {
	var r podResources
	for _, c := range p.GetSpec().GetContainers() {
		cr := containerResources(c)
		r.cpuReq += cr.cpuReq
		r.memReq += cr.memReq
		r.cpuLim += cr.cpuLim
		r.memLim += cr.memLim
	}
	for _, c := range p.GetSpec().GetInitContainers() {
		cr := containerResources(c)
		r.cpuReq, r.memReq = max(r.cpuReq, cr.cpuReq), max(r.memReq, cr.memReq)
		r.cpuLim, r.memLim = max(r.cpuLim, cr.cpuLim), max(r.memLim, cr.memLim)
	}
	return r
}

func (r *podResources) add(o podResources) {
	r.cpuReq += o.cpuReq
	r.memReq += o.memReq
	r.cpuLim += o.cpuLim
	r.memLim += o.memLim
}

func containerResources(c *v1.Container) podResources {
	req, lim := c.GetResources().GetRequests(), c.GetResources().GetLimits()
	r := podResources{
		cpuReq: milli(req["cpu"]), memReq: bytesOf(req["memory"]),
		cpuLim: milli(lim["cpu"]), memLim: bytesOf(lim["memory"]),
	}
	// A limit without a request requests the limit (Kubernetes' default).
	if r.cpuReq == 0 && req["cpu"] == "" {
		r.cpuReq = r.cpuLim
	}
	if r.memReq == 0 && req["memory"] == "" {
		r.memReq = r.memLim
	}
	return r
}

// milli parses a cpu quantity into millicores (0 if empty or bad: the
// apiserver validated it).
func milli(s string) int64 {
	if s == "" {
		return 0
	}
	q, err := resource.Parse(s)
	if err != nil {
		return 0
	}
	return q.MilliValue()
}

// bytesOf parses a memory quantity into bytes.
func bytesOf(s string) int64 {
	if s == "" {
		return 0
	}
	q, err := resource.Parse(s)
	if err != nil {
		return 0
	}
	return q.Value()
}

// cpuString is "250m", "2" or "0".
func cpuString(m int64) string { return resource.NewMilli(m).CPUString() }

// memString is "128Mi", "1536Ki" or bytes; large odd amounts round to Mi.
func memString(b int64) string {
	if b >= 1<<30 && b%(1<<20) != 0 {
		return fmt.Sprintf("%dMi", b>>20)
	}
	return resource.New(b).BytesString()
}

// percent is "25%" of total, or "" when total is unknown.
func percent(v, total int64) string {
	if total <= 0 {
		return ""
	}
	return fmt.Sprintf("%d%%", v*100/total)
}

// withPercent is "250m (12%)", or the amount alone without a total.
func withPercent(s string, v, total int64) string {
	if p := percent(v, total); p != "" {
		return s + " (" + p + ")"
	}
	return s
}

// allocatable is a node's allocatable cpu (millicores) and memory (bytes).
func allocatable(n *v1.Node) (cpu, mem int64) {
	a := n.GetStatus().GetAllocatable()
	return milli(a["cpu"]), bytesOf(a["memory"])
}
