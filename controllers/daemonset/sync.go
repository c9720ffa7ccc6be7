package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// nodePods is one node's part of a sync.
type nodePods struct {
	node     *v1.Node
	run      bool // a daemon pod should be created here
	stay     bool // an existing daemon pod may stay
	pods     []*v1.Pod
	newPod   *v1.Pod // the oldest active pod of the current revision
	oldPod   *v1.Pod // the oldest active pod of another revision
	unusable []*v1.Pod
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ds, ok := c.dss.Get(key)
	if !ok {
		c.exp.Delete(key)
		return nil
	}
	sel, err := labels.FromLabelSelector(ds.GetSpec().GetSelector())
	if err != nil || sel.Empty() {
		return controller.Permanent(fmt.Errorf("daemonset %s: spec.selector selects nothing or is invalid: %v", key, err))
	}
	satisfied := c.exp.Satisfied(key)
	hash, err := c.history.Current(ctx, ds, ds.GetSpec().GetTemplate())
	if err != nil {
		return err
	}
	m := ds.GetMetadata()
	candidates := append(c.pods.ByIndex(controller.IndexControllerUID, m.GetUid()), c.pods.ByIndex(controller.IndexOrphanNamespace, m.GetNamespace())...)
	claimer := &controller.Claimer[*v1.Pod]{API: c.podAPI, Owner: ds, APIVersion: "apps/v1", Kind: "DaemonSet", Selector: sel,
		CanAdopt: controller.RecheckOwner(c.dsAPI, ds)}
	pods, err := claimer.Claim(ctx, candidates)
	if err != nil {
		return err
	}
	nodes, orphans := c.layout(ds, pods, hash)
	var errs []error
	if satisfied && m.GetDeletionTimestamp() == nil {
		errs = append(errs, c.manage(ctx, ds, nodes, orphans, hash))
	}
	errs = append(errs, c.writeStatus(ctx, ds, nodes), c.history.Cleanup(ctx, ds, int(ds.GetSpec().GetRevisionHistoryLimit()), pods, hash))
	return errors.Join(errs...)
}

// layout groups the DaemonSet's pods by the node they are for and decides
// which nodes should run one; orphans are pods for nodes that are gone.
func (c *Controller) layout(ds *v1.DaemonSet, pods []*v1.Pod, hash string) ([]*nodePods, []*v1.Pod) {
	byNode := map[string][]*v1.Pod{}
	for _, p := range pods {
		byNode[targetNode(p)] = append(byNode[targetNode(p)], p)
	}
	var out []*nodePods
	for _, n := range c.nodes.List() {
		name := n.GetMetadata().GetName()
		np := &nodePods{node: n, pods: byNode[name]}
		delete(byNode, name)
		np.run, np.stay = shouldRun(ds, n)
		sort.Slice(np.pods, func(i, j int) bool {
			return np.pods[i].GetMetadata().GetCreationTimestamp().AsTime().Before(np.pods[j].GetMetadata().GetCreationTimestamp().AsTime())
		})
		for _, p := range np.pods {
			switch {
			case p.GetMetadata().GetDeletionTimestamp() != nil:
			case p.GetStatus().GetPhase() == "Failed" || p.GetStatus().GetPhase() == "Succeeded":
				np.unusable = append(np.unusable, p)
			case p.GetMetadata().GetLabels()[HashLabel] == hash && np.newPod == nil:
				np.newPod = p
			case p.GetMetadata().GetLabels()[HashLabel] != hash && np.oldPod == nil:
				np.oldPod = p
			default:
				np.unusable = append(np.unusable, p) // a duplicate
			}
		}
		out = append(out, np)
	}
	var orphans []*v1.Pod
	for _, ps := range byNode {
		for _, p := range ps {
			if p.GetMetadata().GetDeletionTimestamp() == nil {
				orphans = append(orphans, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.GetMetadata().GetName() < out[j].node.GetMetadata().GetName() })
	return out, orphans
}

// manage creates and deletes daemon pods, then takes the rolling update's
// step.
func (c *Controller) manage(ctx context.Context, ds *v1.DaemonSet, nodes []*nodePods, orphans []*v1.Pod, hash string) error {
	var create []string
	del := orphans
	for _, np := range nodes {
		del = append(del, np.unusable...)
		for _, p := range np.unusable {
			if p.GetStatus().GetPhase() == "Failed" {
				c.events.Eventf(ds, controller.Warning, "FailedDaemonPod", "Found failed daemon pod %s/%s on node %s, will try to kill it",
					p.GetMetadata().GetNamespace(), p.GetMetadata().GetName(), np.node.GetMetadata().GetName())
			}
		}
		switch {
		case !np.stay:
			for _, p := range []*v1.Pod{np.newPod, np.oldPod} {
				if p != nil {
					del = append(del, p)
				}
			}
		case np.newPod == nil && np.oldPod == nil && np.run:
			create = append(create, np.node.GetMetadata().GetName())
		case np.newPod != nil && np.oldPod != nil && !surging(ds):
			del = append(del, np.oldPod) // left from a surge that is over
		}
	}
	if len(create) == 0 && len(del) == 0 && ds.GetSpec().GetUpdateStrategy().GetType() == "RollingUpdate" {
		c2, d2, err := rollingUpdate(ds, nodes, c.now())
		if err != nil {
			return controller.Permanent(err)
		}
		create, del = c2, d2
	}
	return c.apply(ctx, ds, create, del, hash)
}

func surging(ds *v1.DaemonSet) bool {
	ru := ds.GetSpec().GetUpdateStrategy().GetRollingUpdate()
	return ds.GetSpec().GetUpdateStrategy().GetType() == "RollingUpdate" && ru.GetMaxSurge() != "" && ru.GetMaxSurge() != "0" && ru.GetMaxSurge() != "0%"
}

// apply issues the creates and deletes, recorded as expectations first.
func (c *Controller) apply(ctx context.Context, ds *v1.DaemonSet, create []string, del []*v1.Pod, hash string) error {
	key := v1.Key(ds)
	if len(create) == 0 && len(del) == 0 {
		return nil
	}
	uids := make([]string, len(del))
	for i, p := range del {
		uids[i] = p.GetMetadata().GetUid()
	}
	c.exp.ExpectDeletions(key, uids)
	c.exp.ExpectCreations(key, len(create))
	var mu sync.Mutex
	var errs []error
	next := 0
	created, err := controller.SlowStart(len(create), 1, func() error {
		mu.Lock()
		node := create[next]
		next++
		mu.Unlock()
		return c.createPod(ctx, ds, node, hash)
	})
	for range len(create) - created {
		c.exp.CreationObserved(key)
	}
	errs = append(errs, err)
	var wg sync.WaitGroup
	for _, p := range del {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pm := p.GetMetadata()
			_, err := c.podAPI.Delete(ctx, pm.GetNamespace(), pm.GetName(), client.DeleteOptions{})
			if err != nil {
				c.exp.DeletionObserved(key, pm.GetUid())
				if !apierrors.IsNotFound(err) {
					c.events.Eventf(ds, controller.Warning, "FailedDelete", "Error deleting pod %s: %v", pm.GetName(), err)
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return
			}
			c.events.Eventf(ds, controller.Normal, "SuccessfulDelete", "Deleted pod: %s", pm.GetName())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// daemonTolerations are the tolerations every daemon pod gets, so that a
// node's own troubles do not take its agent away (Kubernetes' list).
func daemonTolerations(hostNetwork bool) []*v1.Toleration {
	out := []*v1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute"},
		{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute"},
		{Key: "node.kubernetes.io/disk-pressure", Operator: "Exists", Effect: "NoSchedule"},
		{Key: "node.kubernetes.io/memory-pressure", Operator: "Exists", Effect: "NoSchedule"},
		{Key: "node.kubernetes.io/pid-pressure", Operator: "Exists", Effect: "NoSchedule"},
		{Key: "node.kubernetes.io/unschedulable", Operator: "Exists", Effect: "NoSchedule"},
	}
	if hostNetwork {
		out = append(out, &v1.Toleration{Key: "node.kubernetes.io/network-unavailable", Operator: "Exists", Effect: "NoSchedule"})
	}
	return out
}

// withTolerations adds the daemon tolerations a pod spec does not have.
func withTolerations(s *v1.PodSpec) []*v1.Toleration {
	out := append([]*v1.Toleration(nil), s.GetTolerations()...)
	for _, t := range daemonTolerations(s.GetHostNetwork()) {
		have := false
		for _, o := range out {
			if o.Key == t.Key && o.Effect == t.Effect && o.Operator == t.Operator {
				have = true
			}
		}
		if !have {
			out = append(out, t)
		}
	}
	return out
}

// shouldRun says whether a daemon pod should be created on node (run) and
// whether one there may stay (stay).
func shouldRun(ds *v1.DaemonSet, node *v1.Node) (run, stay bool) {
	spec := ds.GetSpec().GetTemplate().GetSpec()
	lbls, name := node.GetMetadata().GetLabels(), node.GetMetadata().GetName()
	if sel := spec.GetNodeSelector(); len(sel) > 0 && !labels.SelectorFromSet(sel).Matches(lbls) {
		return false, false
	}
	if req := spec.GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution(); req != nil {
		terms, err := labels.CompileNodeSelector(req, "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
		if err != nil || !labels.NodeSelectorMatches(terms, lbls, name) {
			return false, false
		}
	}
	tols := withTolerations(spec)
	run, stay = true, true
	for _, t := range node.GetSpec().GetTaints() {
		if v1.TolerationsTolerate(tols, t) {
			continue
		}
		switch t.Effect {
		case "NoSchedule":
			run = false
		case "NoExecute":
			return false, false
		}
	}
	return run, stay
}

// targetNode is the node a daemon pod is for: where it is bound, or the
// node its affinity pins it to.
func targetNode(p *v1.Pod) string {
	if n := p.GetSpec().GetNodeName(); n != "" {
		return n
	}
	for _, t := range p.GetSpec().GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution().GetNodeSelectorTerms() {
		for _, f := range t.GetMatchFields() {
			if f.Key == "metadata.name" && f.Operator == "In" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// maxGenerateNamePrefix keeps generated pod names within a DNS label.
const maxGenerateNamePrefix = 58

func (c *Controller) createPod(ctx context.Context, ds *v1.DaemonSet, node, hash string) error {
	t := ds.GetSpec().GetTemplate()
	m := ds.GetMetadata()
	prefix := m.GetName() + "-"
	if len(prefix) > maxGenerateNamePrefix {
		prefix = prefix[:maxGenerateNamePrefix]
	}
	lbls := map[string]string{HashLabel: hash}
	for k, v := range t.GetMetadata().GetLabels() {
		lbls[k] = v
	}
	var ann map[string]string
	if a := t.GetMetadata().GetAnnotations(); a != nil {
		ann = make(map[string]string, len(a))
		for k, v := range a {
			ann[k] = v
		}
	}
	spec := proto.Clone(t.GetSpec()).(*v1.PodSpec)
	spec.Tolerations = withTolerations(spec)
	pinToNode(spec, node)
	pod := &v1.Pod{Metadata: &v1.ObjectMeta{GenerateName: prefix, Namespace: m.GetNamespace(), Labels: lbls, Annotations: ann,
		OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(ds, "apps/v1", "DaemonSet")}}, Spec: spec}
	out, err := c.podAPI.Create(ctx, pod)
	if err != nil {
		c.events.Eventf(ds, controller.Warning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.events.Eventf(ds, controller.Normal, "SuccessfulCreate", "Created pod: %s", out.GetMetadata().GetName())
	return nil
}

// pinToNode makes the pod's required node affinity select only node (on
// metadata.name), keeping its other requirements, as Kubernetes does.
func pinToNode(spec *v1.PodSpec, node string) {
	field := &v1.LabelSelectorRequirement{Key: "metadata.name", Operator: "In", Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &v1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{MatchFields: []*v1.LabelSelectorRequirement{field}}}}
		return
	}
	for _, t := range req.NodeSelectorTerms {
		t.MatchFields = []*v1.LabelSelectorRequirement{field}
	}
}
