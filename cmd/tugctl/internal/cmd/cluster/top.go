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
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/allocation"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// topFlags are top's flags, for nodes and pods alike (--containers only
// for pods).
type topFlags struct {
	containers bool
	selector   string
	sortBy     string
	noHeaders  bool
}

func newTopCommand(o *cli.Options) *cobra.Command {
	f := &topFlags{}
	cmd := &cobra.Command{
		Use:   "top (nodes|pods) [NAME] [-l SELECTOR] [--sort-by cpu|memory] [--no-headers]",
		Short: "Show cpu and memory use of nodes or pods beside their requests and limits",
		Long: `Show cpu (millicores, averaged over the kubelet's last sampling window) and
memory (working set) use, read from each node's kubelet (cgroup statistics,
through the apiserver), beside what the pods request and are limited to.
Percentages are of the node's allocatable. A node that is not Ready or does
not answer shows <unknown>. --sort-by cpu or memory puts the largest use
first (unknown last).`,
		Example: `  tugctl top nodes
  tugctl top pods -A --sort-by memory
  tugctl top pods -l app=web
  tugctl top pods web --containers`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.sortBy != "" && f.sortBy != "cpu" && f.sortBy != "memory" {
				return fmt.Errorf("--sort-by %q: want cpu or memory", f.sortBy)
			}
			if len(args) == 2 && f.selector != "" {
				return fmt.Errorf("name one or use -l, not both")
			}
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
				if f.containers {
					return fmt.Errorf("--containers: only with top pods")
				}
				return runTopNodes(cmd.Context(), o, name, f)
			case "Pod":
				return runTopPods(cmd.Context(), o, name, f)
			}
			return fmt.Errorf("top %s: want nodes or pods", args[0])
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.containers, "containers", false, "with pods: one line per container")
	fl.StringVarP(&f.selector, "selector", "l", "", "only the nodes or pods with these labels")
	fl.StringVar(&f.sortBy, "sort-by", "", "cpu or memory: the largest use first")
	fl.BoolVar(&f.noHeaders, "no-headers", false, "omit the header line")
	return cmd
}

// topRow is a line of top's table and the use it shows (-1: unknown),
// for --sort-by.
type topRow struct {
	cells    []string
	cpu, mem int64
}

// writeTop prints header and rows, sorted by f.sortBy.
func writeTop(o *cli.Options, f *topFlags, header []string, rows []topRow) {
	key := func(r topRow) int64 { return r.cpu }
	if f.sortBy == "memory" {
		key = func(r topRow) int64 { return r.mem }
	}
	if f.sortBy != "" {
		sort.SliceStable(rows, func(i, j int) bool { return key(rows[i]) > key(rows[j]) })
	}
	var out [][]string
	if !f.noHeaders {
		out = append(out, header)
	}
	for _, r := range rows {
		out = append(out, r.cells)
	}
	printers.WriteRows(o.Out, out)
}

// labelSelector checks -l.
func (f *topFlags) labelSelector() (string, error) {
	if f.selector == "" {
		return "", nil
	}
	s, err := labels.Parse(f.selector)
	if err != nil {
		return "", fmt.Errorf("-l %q: %v", f.selector, err)
	}
	return s.String(), nil
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

func runTopNodes(ctx context.Context, o *cli.Options, name string, f *topFlags) error {
	sel, err := f.labelSelector()
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	nodes, _, err := client.For[*v1.Node](c).List(ctx, client.ListOptions{LabelSelector: sel})
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
	header := []string{"NAME", "CPU(cores)", "CPU%", "CPU REQUESTS", "CPU LIMITS", "MEMORY(bytes)", "MEMORY%", "MEMORY REQUESTS", "MEMORY LIMITS"}
	var rows []topRow
	for _, n := range nodes {
		nm := n.GetMetadata().GetName()
		cpuAlloc, memAlloc := allocation.Allocatable(n)
		r := perNode[nm]
		if r == nil {
			r = &allocation.Resources{}
		}
		useCPU, cpuPct, useMem, memPct := "<unknown>", "<unknown>", "<unknown>", "<unknown>"
		cpuUse, memUse := int64(-1), int64(-1)
		if s := stats[nm]; s != nil {
			u := s.GetNode()
			cpuUse, memUse = u.GetCpuMilli(), u.GetMemoryBytes()
			useCPU, cpuPct = allocation.CPU(u.GetCpuMilli()), cmp.Or(allocation.Percent(u.GetCpuMilli(), cpuAlloc), "<unknown>")
			useMem, memPct = allocation.Memory(u.GetMemoryBytes()), cmp.Or(allocation.Percent(u.GetMemoryBytes(), memAlloc), "<unknown>")
		}
		rows = append(rows, topRow{cpu: cpuUse, mem: memUse, cells: []string{nm, useCPU, cpuPct,
			allocation.WithPercent(allocation.CPU(r.CPURequest), r.CPURequest, cpuAlloc), allocation.WithPercent(allocation.CPU(r.CPULimit), r.CPULimit, cpuAlloc),
			useMem, memPct,
			allocation.WithPercent(allocation.Memory(r.MemoryRequest), r.MemoryRequest, memAlloc), allocation.WithPercent(allocation.Memory(r.MemoryLimit), r.MemoryLimit, memAlloc)}})
	}
	writeTop(o, f, header, rows)
	return nil
}

func runTopPods(ctx context.Context, o *cli.Options, name string, f *topFlags) error {
	containers := f.containers
	sel, err := f.labelSelector()
	if err != nil {
		return err
	}
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
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns, LabelSelector: sel})
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
	header = append(header, "CPU(cores)", "CPU REQUESTS", "CPU LIMITS", "MEMORY(bytes)", "MEMORY REQUESTS", "MEMORY LIMITS", "NODE")
	var rows []topRow
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
			row := topRow{cpu: -1, mem: -1}
			if ps != nil {
				row.cpu, row.mem = ps.GetUsage().GetCpuMilli(), ps.GetUsage().GetMemoryBytes()
				cpu, mem = allocation.CPU(row.cpu), allocation.Memory(row.mem)
			} else if stats[p.GetSpec().GetNodeName()] != nil {
				cpu, mem = "0", "0"
				row.cpu, row.mem = 0, 0
			}
			row.cells = append(prefix, cpu, allocation.CPU(r.CPURequest), allocation.CPU(r.CPULimit), mem, allocation.Memory(r.MemoryRequest), allocation.Memory(r.MemoryLimit), p.GetSpec().GetNodeName())
			rows = append(rows, row)
			continue
		}
		for _, ctr := range p.GetSpec().GetContainers() {
			r := allocation.Container(ctr)
			cpu, mem := "<unknown>", "<unknown>"
			row := topRow{cpu: -1, mem: -1}
			if u := ps.GetContainers()[ctr.Name]; u != nil {
				row.cpu, row.mem = u.GetCpuMilli(), u.GetMemoryBytes()
				cpu, mem = allocation.CPU(row.cpu), allocation.Memory(row.mem)
			}
			row.cells = append(append(append([]string{}, prefix...), ctr.Name), cpu, allocation.CPU(r.CPURequest), allocation.CPU(r.CPULimit), mem, allocation.Memory(r.MemoryRequest), allocation.Memory(r.MemoryLimit), p.GetSpec().GetNodeName())
			rows = append(rows, row)
		}
	}
	writeTop(o, f, header, rows)
	return nil
}
