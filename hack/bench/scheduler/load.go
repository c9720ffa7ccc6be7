package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The workload of scheduler_perf's SchedulingBasic: nodes of 4 cpu, 32Gi
// and 110 pods; pods requesting 100m cpu and 500Mi.
//
// The "affinity" workload mixes in what scheduler_perf's
// SchedulingPodAntiAffinity and TopologySpreading do: nodes in 10 zones
// (topology.kubernetes.io/zone); a third of the pods plain, a third in
// groups of 10 with required anti-affinity to their group on
// kubernetes.io/hostname, a third in groups of 50 spread over the zones
// with maxSkew 1 (DoNotSchedule) and over the nodes (ScheduleAnyway).
const (
	zoneKey       = "topology.kubernetes.io/zone"
	zones         = 10
	antiGroupSize = 10
	spreadGroup   = 50
)

func benchNode(i int) *v1.Node {
	alloc := map[string]string{"cpu": "4", "memory": "32Gi", "pods": "110"}
	name := fmt.Sprintf("node-%05d", i)
	return &v1.Node{
		Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, zoneKey: fmt.Sprintf("zone-%d", i%zones)}},
		Spec:     &v1.NodeSpec{},
		Status: &v1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}},
		},
	}
}

func benchPod(i int, workload string) *v1.Pod {
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: "default"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{
			Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "memory": "500Mi"}},
		}}},
	}
	if workload != "affinity" {
		return p
	}
	switch i % 3 {
	case 1:
		group := map[string]string{"anti": fmt.Sprint(i / 3 / antiGroupSize)}
		p.Metadata.Labels = group
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*v1.PodAffinityTerm{
			{TopologyKey: "kubernetes.io/hostname", LabelSelector: &v1.LabelSelector{MatchLabels: group}}}}}
	case 2:
		group := map[string]string{"spread": fmt.Sprint(i / 3 / spreadGroup)}
		p.Metadata.Labels = group
		p.Spec.TopologySpreadConstraints = []*v1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: "DoNotSchedule", LabelSelector: &v1.LabelSelector{MatchLabels: group}},
			{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: "ScheduleAnyway", LabelSelector: &v1.LabelSelector{MatchLabels: group}},
		}
	}
	return p
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// createLoad creates the nodes and pods and returns how long the pods took.
func createLoad(ctx context.Context, c *client.Client, nodes, pods int, workload string) (time.Duration, error) {
	nodeAPI, podAPI := client.For[*v1.Node](c), client.For[*v1.Pod](c)
	if err := parallel(ctx, nodes, 32, func(ctx context.Context, i int) error {
		_, err := nodeAPI.Create(ctx, benchNode(i))
		return err
	}); err != nil {
		return 0, fmt.Errorf("creating nodes: %w", err)
	}
	start := time.Now()
	if err := parallel(ctx, pods, 64, func(ctx context.Context, i int) error {
		_, err := podAPI.Create(ctx, benchPod(i, workload))
		return err
	}); err != nil {
		return 0, fmt.Errorf("creating pods: %w", err)
	}
	return time.Since(start), nil
}

// verify checks that every pod is bound and no node is over its
// allocatable cpu, memory or pod count; for the affinity workload also
// that no two pods of an anti-affinity group share a node and that every
// spread group's zones differ by at most 1.
func verify(ctx context.Context, c *client.Client, wantPods int) error {
	nodes, _, err := client.For[*v1.Node](c).List(ctx, client.ListOptions{Limit: 1000})
	if err != nil {
		return err
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: "default", Limit: 1000})
	if err != nil {
		return err
	}
	type use struct{ cpu, mem, pods int64 }
	used := map[string]*use{}
	unbound := 0
	zoneOf := map[string]string{}
	for _, n := range nodes {
		zoneOf[n.Metadata.Name] = n.Metadata.Labels[zoneKey]
	}
	antiNodes := map[string]bool{}             // group/node
	spreadZones := map[string]map[string]int{} // group -> zone -> pods
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			unbound++
			continue
		}
		if g, ok := p.Metadata.Labels["anti"]; ok {
			k := g + "/" + p.Spec.NodeName
			if antiNodes[k] {
				return fmt.Errorf("two pods of anti-affinity group %s on node %s", g, p.Spec.NodeName)
			}
			antiNodes[k] = true
		}
		if g, ok := p.Metadata.Labels["spread"]; ok {
			if spreadZones[g] == nil {
				spreadZones[g] = map[string]int{}
			}
			spreadZones[g][zoneOf[p.Spec.NodeName]]++
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &use{}
			used[p.Spec.NodeName] = u
		}
		req := p.Spec.Containers[0].Resources.Requests
		u.cpu += resource.MustParse(req["cpu"]).MilliValue()
		u.mem += resource.MustParse(req["memory"]).Value()
		u.pods++
	}
	for g, z := range spreadZones {
		lo, hi := wantPods, 0
		for i := 0; i < zones; i++ {
			n := z[fmt.Sprintf("zone-%d", i)]
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 1 {
			return fmt.Errorf("spread group %s skewed over the zones: %v", g, z)
		}
	}
	if len(pods) != wantPods || unbound != 0 {
		return fmt.Errorf("%d pods listed, %d unbound; want %d bound", len(pods), unbound, wantPods)
	}
	for _, n := range nodes {
		u, a := used[n.Metadata.Name], n.Status.Allocatable
		if u != nil && (u.cpu > resource.MustParse(a["cpu"]).MilliValue() || u.mem > resource.MustParse(a["memory"]).Value() || u.pods > resource.MustParse(a["pods"]).Value()) {
			return fmt.Errorf("node %s overcommitted: %+v of %v", n.Metadata.Name, *u, a)
		}
	}
	return nil
}
