package troubleshoot

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// podTarget resolves the POD argument of logs and exec, as kubectl does:
// NAME or pod/NAME is that pod; deploy/NAME or rs/NAME is one of the pods
// its selector matches, the one most worth looking at (see podRank). When
// there are several, "Found N pods, using pod/X" goes to ErrOut.
func podTarget(ctx context.Context, o *cli.Options, arg string) (ns, name string, err error) {
	ns, err = o.Namespace()
	if err != nil {
		return "", "", err
	}
	kind, objName, hasKind := strings.Cut(arg, "/")
	if !hasKind {
		return ns, arg, nil
	}
	if objName == "" {
		return "", "", fmt.Errorf("%q: want POD, pod/NAME, deploy/NAME or rs/NAME", arg)
	}
	k, err := cli.LookupKind(kind)
	if err != nil {
		return "", "", err
	}
	c, err := o.Client()
	if err != nil {
		return "", "", err
	}
	var sel *v1.LabelSelector
	switch k.Name {
	case "Pod":
		return ns, objName, nil
	case "Deployment":
		d, err := client.For[*v1.Deployment](c).Get(ctx, ns, objName)
		if err != nil {
			return "", "", err
		}
		sel = d.GetSpec().GetSelector()
	case "ReplicaSet":
		rs, err := client.For[*v1.ReplicaSet](c).Get(ctx, ns, objName)
		if err != nil {
			return "", "", err
		}
		sel = rs.GetSpec().GetSelector()
	default:
		return "", "", fmt.Errorf("%q: want a pod, a deployment or a replica set, not %s", arg, k.Plural)
	}
	s, err := labels.FromLabelSelector(sel)
	if err != nil {
		return "", "", fmt.Errorf("%s: spec.selector: %v", arg, err)
	}
	name, err = pickPod(ctx, o, ns, arg, s)
	return ns, name, err
}

// pickPod is the pod of ns that sel matches most worth looking at (see
// podRank), saying "Found N pods, using pod/X" on ErrOut when there are
// several; what names the object whose selector it is.
func pickPod(ctx context.Context, o *cli.Options, ns, what string, s labels.Selector) (string, error) {
	if s.Empty() {
		return "", fmt.Errorf("%s: spec.selector selects nothing", what)
	}
	c, err := o.Client()
	if err != nil {
		return "", err
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns, LabelSelector: s.String()})
	if err != nil {
		return "", err
	}
	if len(pods) == 0 {
		return "", fmt.Errorf("%s: no pods match its selector %s", what, s.String())
	}
	sort.SliceStable(pods, func(i, j int) bool { return podRank(pods[i], pods[j]) })
	if len(pods) > 1 {
		fmt.Fprintf(o.ErrOut, "Found %d pods, using pod/%s\n", len(pods), pods[0].GetMetadata().GetName())
	}
	return pods[0].GetMetadata().GetName(), nil
}

// podRank says whether pod a is a better pick than b for logs and exec:
// scheduled before unscheduled, Running before Pending before the rest,
// ready before not ready, not terminating before terminating, then the
// older, then by name (kubectl's ByLogging, simplified).
func podRank(a, b *v1.Pod) bool {
	scheduled := func(p *v1.Pod) bool { return p.GetSpec().GetNodeName() != "" }
	phase := func(p *v1.Pod) int {
		switch p.GetStatus().GetPhase() {
		case "Running":
			return 2
		case "Pending":
			return 1
		}
		return 0
	}
	ready := func(p *v1.Pod) bool { return table.ConditionStatus(p.GetStatus().GetConditions(), "Ready") == "True" }
	live := func(p *v1.Pod) bool { return p.GetMetadata().GetDeletionTimestamp() == nil }
	for _, f := range []func(*v1.Pod) bool{scheduled, live} {
		if f(a) != f(b) {
			return f(a)
		}
	}
	if phase(a) != phase(b) {
		return phase(a) > phase(b)
	}
	if ready(a) != ready(b) {
		return ready(a)
	}
	ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.GetMetadata().GetName() < b.GetMetadata().GetName()
}
