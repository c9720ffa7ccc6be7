// Package allocation is what pods ask of a node: their cpu and memory
// requests and limits, summed the way the scheduler sums them, and shown
// against a node's allocatable (describe node's "Allocated resources",
// top's REQUESTS and LIMITS columns), in kubectl's units (250m, 128Mi).
// It computes from the objects given and reads nothing.
package allocation

import (
	"fmt"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Resources are a pod's cpu (millicores) and memory (bytes) requests
// and limits, as the scheduler counts them: the sum over its containers,
// or the largest init container's when that is more. A container without
// a limit makes the pod's limit of that resource unbounded (0 here: the
// column prints 0, as kubectl's does).
type Resources struct {
	CPURequest, MemoryRequest, CPULimit, MemoryLimit int64
}

// Pod is what pod p requests and is limited to.
func Pod(p *v1.Pod) Resources {
	var r Resources
	for _, c := range p.GetSpec().GetContainers() {
		r.Add(Container(c))
	}
	for _, c := range p.GetSpec().GetInitContainers() {
		cr := Container(c)
		r.CPURequest, r.MemoryRequest = max(r.CPURequest, cr.CPURequest), max(r.MemoryRequest, cr.MemoryRequest)
		r.CPULimit, r.MemoryLimit = max(r.CPULimit, cr.CPULimit), max(r.MemoryLimit, cr.MemoryLimit)
	}
	return r
}

// Add adds o to r.
func (r *Resources) Add(o Resources) {
	r.CPURequest += o.CPURequest
	r.MemoryRequest += o.MemoryRequest
	r.CPULimit += o.CPULimit
	r.MemoryLimit += o.MemoryLimit
}

// Container is what container c requests and is limited to.
func Container(c *v1.Container) Resources {
	req, lim := c.GetResources().GetRequests(), c.GetResources().GetLimits()
	r := Resources{
		CPURequest: milli(req["cpu"]), MemoryRequest: bytesOf(req["memory"]),
		CPULimit: milli(lim["cpu"]), MemoryLimit: bytesOf(lim["memory"]),
	}
	// A limit without a request requests the limit (Kubernetes' default).
	if r.CPURequest == 0 && req["cpu"] == "" {
		r.CPURequest = r.CPULimit
	}
	if r.MemoryRequest == 0 && req["memory"] == "" {
		r.MemoryRequest = r.MemoryLimit
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

// CPU is "250m", "2" or "0".
func CPU(m int64) string { return resource.NewMilli(m).CPUString() }

// Memory is "128Mi", "1536Ki" or bytes; large odd amounts round to Mi.
func Memory(b int64) string {
	if b >= 1<<30 && b%(1<<20) != 0 {
		return fmt.Sprintf("%dMi", b>>20)
	}
	return resource.New(b).BytesString()
}

// Percent is "25%" of total, or "" when total is unknown.
func Percent(v, total int64) string {
	if total <= 0 {
		return ""
	}
	return fmt.Sprintf("%d%%", v*100/total)
}

// WithPercent is "250m (12%)", or the amount alone without a total.
func WithPercent(s string, v, total int64) string {
	if p := Percent(v, total); p != "" {
		return s + " (" + p + ")"
	}
	return s
}

// Allocatable is a node's allocatable cpu (millicores) and memory (bytes).
func Allocatable(n *v1.Node) (cpu, mem int64) {
	a := n.GetStatus().GetAllocatable()
	return milli(a["cpu"]), bytesOf(a["memory"])
}
