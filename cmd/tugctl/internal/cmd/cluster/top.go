package cluster

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/allocation"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

func newTopCommand(o *cli.Options) *cobra.Command {
	var containers bool
	cmd := &cobra.Command{
		Use:   "top (nodes|pods) [NAME]",
		Short: "Show cpu and memory use of nodes or pods beside their requests and limits",
		Long: `Show cpu (millicores, averaged over the kubelet's last sampling window) and
memory (working set) use, read from each node's kubelet (cgroup statistics,
through the apiserver), beside what the pods request and are limited to.
Percentages are of the node's allocatable. A node that is not Ready or does
not answer shows <unknown>.`,
		Example: `  tugctl top nodes
  tugctl top pods -A
  tugctl top pods web --containers`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || len(args) > 2 {
				return fmt.Errorf("want top nodes [NAME] or top pods [NAME]")
			}
			k, err := cli.LookupKind(args[0])
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			switch k.Name {
			case "Node":
				return runTopNodes(cmd.Context(), o, name)
			case "Pod":
				return runTopPods(cmd.Context(), o, name, containers)
			}
			return fmt.Errorf("top %s: want nodes or pods", args[0])
		},
	}
	cmd.Flags().BoolVar(&containers, "containers", false, "with pods: one line per container")
	return cmd
}

// nodeStats asks each named node's kubelet for its stats, in parallel; a
// node that does not answer maps to nil.
func nodeStats(ctx context.Context, c *client.Client, nodes []string) map[string]*v1.StatsResponse {
	api := v1.NewNodeAPIClient(c.Conn())
	out := map[string]*v1.StatsResponse{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			resp, err := api.Stats(sctx, &v1.StatsRequest{NodeName: n})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				out[n] = resp
			}
		}()
	}
	wg.Wait()
	return out
}

func runTopNodes(ctx context.Context, o *cli.Options, name string) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	nodes, _, err := client.For[*v1.Node](c).List(ctx, client.ListOptions{})
	if err != nil {
		return err
	}
	if name != "" {
		var keep []*v1.Node
		for _, n := range nodes {
			if n.GetMetadata().GetName() == name {
				keep = append(keep, n)
			}
		}
		if len(keep) == 0 {
			return fmt.Errorf("%w: nodes %q not found", apierrors.ErrNotFound, name)
		}
		nodes = keep
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{})
	if err != nil {
		return err
	}
	perNode := map[string]*allocation.Resources{}
	for _, p := range pods {
		if ph := p.GetStatus().GetPhase(); p.GetSpec().GetNodeName() == "" || ph == "Succeeded" || ph == "Failed" {
			continue
		}
		r := perNode[p.GetSpec().GetNodeName()]
		if r == nil {
			r = &allocation.Resources{}
			perNode[p.GetSpec().GetNodeName()] = r
		}
		r.Add(allocation.Pod(p))
	}
	var ready []string
	for _, n := range nodes {
		if table.ConditionStatus(n.GetStatus().GetConditions(), "Ready") == "True" {
			ready = append(ready, n.GetMetadata().GetName())
		}
	}
	stats := nodeStats(ctx, c, ready)
	rows := [][]string{{"NAME", "CPU(cores)", "CPU%", "CPU REQUESTS", "CPU LIMITS", "MEMORY(bytes)", "MEMORY%", "MEMORY REQUESTS", "MEMORY LIMITS"}}
	for _, n := range nodes {
		nm := n.GetMetadata().GetName()
		cpuAlloc, memAlloc := allocation.Allocatable(n)
		r := perNode[nm]
		if r == nil {
			r = &allocation.Resources{}
		}
		useCPU, cpuPct, useMem, memPct := "<unknown>", "<unknown>", "<unknown>", "<unknown>"
		if s := stats[nm]; s != nil {
			u := s.GetNode()
			useCPU, cpuPct = allocation.CPU(u.GetCpuMilli()), cmp.Or(allocation.Percent(u.GetCpuMilli(), cpuAlloc), "<unknown>")
			useMem, memPct = allocation.Memory(u.GetMemoryBytes()), cmp.Or(allocation.Percent(u.GetMemoryBytes(), memAlloc), "<unknown>")
		}
		rows = append(rows, []string{nm, useCPU, cpuPct,
			allocation.WithPercent(allocation.CPU(r.CPURequest), r.CPURequest, cpuAlloc), allocation.WithPercent(allocation.CPU(r.CPULimit), r.CPULimit, cpuAlloc),
			useMem, memPct,
			allocation.WithPercent(allocation.Memory(r.MemoryRequest), r.MemoryRequest, memAlloc), allocation.WithPercent(allocation.Memory(r.MemoryLimit), r.MemoryLimit, memAlloc)})
	}
	printers.WriteRows(o.Out, rows)
	return nil
}

func runTopPods(ctx context.Context, o *cli.Options, name string, containers bool) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns := ""
	if !o.Flags.AllNamespaces {
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns})
	if err != nil {
		return err
	}
	var keep []*v1.Pod
	nodeSet := map[string]bool{}
	for _, p := range pods {
		if (name == "" || p.GetMetadata().GetName() == name) && p.GetStatus().GetPhase() == "Running" {
			keep = append(keep, p)
			nodeSet[p.GetSpec().GetNodeName()] = true
		}
	}
	if name != "" && len(keep) == 0 {
		return fmt.Errorf("%w: no running pod %q in namespace %s", apierrors.ErrNotFound, name, cmp.Or(ns, "any"))
	}
	if len(keep) == 0 {
		k, err := cli.LookupKind("pods")
		if err != nil {
			return err
		}
		o.NoResources(cli.ResourceArgs{Kinds: []*kinds.Kind{k}})
		return nil
	}
	var nodes []string
	for n := range nodeSet {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	stats := nodeStats(ctx, c, nodes)
	usage := map[string]*v1.PodStats{}
	for _, s := range stats {
		for _, ps := range s.GetPods() {
			usage[ps.GetNamespace()+"/"+ps.GetName()] = ps
		}
	}
	header := []string{"NAME"}
	if o.Flags.AllNamespaces {
		header = []string{"NAMESPACE", "NAME"}
	}
	if containers {
		header = append(header, "CONTAINER")
	}
	rows := [][]string{append(header, "CPU(cores)", "CPU REQUESTS", "CPU LIMITS", "MEMORY(bytes)", "MEMORY REQUESTS", "MEMORY LIMITS", "NODE")}
	for _, p := range keep {
		m := p.GetMetadata()
		prefix := []string{m.GetName()}
		if o.Flags.AllNamespaces {
			prefix = []string{m.GetNamespace(), m.GetName()}
		}
		ps := usage[m.GetNamespace()+"/"+m.GetName()]
		if !containers {
			r := allocation.Pod(p)
			cpu, mem := "<unknown>", "<unknown>"
			if ps != nil {
				cpu, mem = allocation.CPU(ps.GetUsage().GetCpuMilli()), allocation.Memory(ps.GetUsage().GetMemoryBytes())
			} else if stats[p.GetSpec().GetNodeName()] != nil {
				cpu, mem = "0", "0"
			}
			rows = append(rows, append(prefix, cpu, allocation.CPU(r.CPURequest), allocation.CPU(r.CPULimit), mem, allocation.Memory(r.MemoryRequest), allocation.Memory(r.MemoryLimit), p.GetSpec().GetNodeName()))
			continue
		}
		for _, ctr := range p.GetSpec().GetContainers() {
			r := allocation.Container(ctr)
			cpu, mem := "<unknown>", "<unknown>"
			if u := ps.GetContainers()[ctr.Name]; u != nil {
				cpu, mem = allocation.CPU(u.GetCpuMilli()), allocation.Memory(u.GetMemoryBytes())
			}
			rows = append(rows, append(append(append([]string{}, prefix...), ctr.Name), cpu, allocation.CPU(r.CPURequest), allocation.CPU(r.CPULimit), mem, allocation.Memory(r.MemoryRequest), allocation.Memory(r.MemoryLimit), p.GetSpec().GetNodeName()))
		}
	}
	printers.WriteRows(o.Out, rows)
	return nil
}
