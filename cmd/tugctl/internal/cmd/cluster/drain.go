package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type drainFlags struct {
	nodeArgs
	force            bool
	ignoreDaemonSets bool
	deleteEmptyDir   bool
	disableEviction  bool
	gracePeriod      int
	timeout          time.Duration
	podSelector      string
}

// evictRetry is how long drain waits before asking again for an eviction
// a disruption budget refused (kubectl's 5s).
const evictRetry = 5 * time.Second

func newDrainCommand(o *cli.Options) *cobra.Command {
	f := &drainFlags{}
	cmd := &cobra.Command{
		Use:   "drain NODE... | -l SELECTOR",
		Short: "Cordon nodes and evict their pods, for maintenance",
		Long: `Cordon each node, then evict its pods through the eviction API, which
honours disruption budgets: an eviction a budget refuses is retried every
5s until --timeout. Then wait until every evicted pod is gone.

Some pods are refused unless a flag allows them, and then nothing on the
node is evicted: pods managed by a DaemonSet (its controller would put them
back at once: --ignore-daemonsets leaves them running), pods without a
controller (nothing recreates them elsewhere: --force deletes them), and
pods with emptyDir volumes (their data is lost: --delete-emptydir-data).
Mirror pods (static pods of the kubelet) are left alone; finished pods are
deleted. When --timeout passes, tugctl names the pods that hold the drain
up and why (a budget's refusal, or a pod still terminating on the node).`,
		Example: `  tugctl drain node1 --ignore-daemonsets
  tugctl drain node1 --ignore-daemonsets --delete-emptydir-data --force --timeout=5m
  tugctl uncordon node1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDrain(cmd.Context(), o, args, f)
		},
	}
	f.register(cmd, false)
	fl := cmd.Flags()
	fl.BoolVar(&f.force, "force", false, "also delete pods that declare no controller (they are not recreated)")
	fl.BoolVar(&f.ignoreDaemonSets, "ignore-daemonsets", false, "leave DaemonSet-managed pods running instead of refusing to drain")
	fl.BoolVar(&f.deleteEmptyDir, "delete-emptydir-data", false, "also evict pods with emptyDir volumes (their data is lost)")
	fl.BoolVar(&f.disableEviction, "disable-eviction", false, "delete pods instead of evicting them: disruption budgets are not checked")
	fl.IntVar(&f.gracePeriod, "grace-period", -1, "seconds each pod gets to stop (-1: the pod's own terminationGracePeriodSeconds)")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after this long, naming the pods left (0: wait as long as it takes)")
	fl.StringVar(&f.podSelector, "pod-selector", "", "only evict the pods with these labels")
	return cmd
}

func runDrain(ctx context.Context, o *cli.Options, args []string, f *drainFlags) error {
	if f.timeout < 0 {
		return fmt.Errorf("--timeout %s: must not be negative", f.timeout)
	}
	if f.gracePeriod < -1 {
		return fmt.Errorf("--grace-period %d: must be -1 (the pod's own) or more", f.gracePeriod)
	}
	nodes, err := f.nodes(ctx, o, args)
	if err != nil {
		return err
	}
	failed := false
	for _, n := range nodes {
		name := n.GetMetadata().GetName()
		changed, err := setUnschedulable(ctx, o, name, true)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(o.Out, "node/%s cordoned\n", name)
		} else {
			fmt.Fprintf(o.Out, "node/%s already cordoned\n", name)
		}
		if err := drainNode(ctx, o, name, f); err != nil {
			fmt.Fprintf(o.ErrOut, "error: unable to drain node %q due to error: %v, continuing command...\n", name, err)
			failed = true
			continue
		}
		fmt.Fprintf(o.Out, "node/%s drained\n", name)
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// drainList sorts a node's pods into those to evict and the warnings and
// errors kubectl prints for the rest, each as "NS/NAME" lists.
type drainList struct {
	evict    []*v1.Pod
	warnings map[string][]string
	errors   map[string][]string
}

const (
	msgDaemonSet  = "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
	msgUnmanaged  = "cannot delete Pods that declare no controller (use --force to override)"
	msgEmptyDir   = "cannot delete Pods with local storage (use --delete-emptydir-data to override)"
	warnDaemonSet = "ignoring DaemonSet-managed Pods"
	warnUnmanaged = "deleting Pods that declare no controller"
	warnEmptyDir  = "deleting Pods with local storage"
)

func classify(pods []*v1.Pod, f *drainFlags) *drainList {
	l := &drainList{warnings: map[string][]string{}, errors: map[string][]string{}}
	for _, p := range pods {
		id := p.GetMetadata().GetNamespace() + "/" + p.GetMetadata().GetName()
		if _, mirror := p.GetMetadata().GetAnnotations()["kubernetes.io/config.mirror"]; mirror {
			continue
		}
		if ph := p.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
			l.evict = append(l.evict, p) // finished: nothing is disrupted
			continue
		}
		owner := controllerOf(p)
		if owner != nil && owner.Kind == "DaemonSet" {
			if f.ignoreDaemonSets {
				l.warnings[warnDaemonSet] = append(l.warnings[warnDaemonSet], id)
			} else {
				l.errors[msgDaemonSet] = append(l.errors[msgDaemonSet], id)
			}
			continue
		}
		ok := true
		if owner == nil {
			if f.force {
				l.warnings[warnUnmanaged] = append(l.warnings[warnUnmanaged], id)
			} else {
				l.errors[msgUnmanaged] = append(l.errors[msgUnmanaged], id)
				ok = false
			}
		}
		if hasEmptyDir(p) {
			if f.deleteEmptyDir {
				l.warnings[warnEmptyDir] = append(l.warnings[warnEmptyDir], id)
			} else {
				l.errors[msgEmptyDir] = append(l.errors[msgEmptyDir], id)
				ok = false
			}
		}
		if ok {
			l.evict = append(l.evict, p)
		}
	}
	return l
}

// joined is kubectl's "msg: a, b; msg2: c" of a warnings or errors map.
func joined(m map[string][]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + strings.Join(m[k], ", ")
	}
	return strings.Join(parts, sep)
}

func controllerOf(p *v1.Pod) *v1.OwnerReference {
	for _, r := range p.GetMetadata().GetOwnerReferences() {
		if r.Controller {
			return r
		}
	}
	return nil
}

func hasEmptyDir(p *v1.Pod) bool {
	for _, v := range p.GetSpec().GetVolumes() {
		if v.GetEmptyDir() != nil {
			return true
		}
	}
	return false
}

// evicting is a pod drain is waiting for.
type evicting struct {
	pod       *v1.Pod
	requested bool      // the eviction (or delete) was accepted
	next      time.Time // when to ask again after a refusal
	refusal   string    // the last refusal's message
}

func (e *evicting) id() string {
	return e.pod.GetMetadata().GetNamespace() + "/" + e.pod.GetMetadata().GetName()
}

// drainNode evicts the node's pods and waits until they are gone.
func drainNode(ctx context.Context, o *cli.Options, node string, f *drainFlags) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{FieldSelector: "spec.nodeName=" + node, LabelSelector: f.podSelector})
	if err != nil {
		return err
	}
	l := classify(pods, f)
	if len(l.errors) > 0 {
		return fmt.Errorf("%s", joined(l.errors, ", "))
	}
	if len(l.warnings) > 0 {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", joined(l.warnings, "; "))
	}
	var deadline time.Time
	if f.timeout > 0 {
		deadline = time.Now().Add(f.timeout)
	}
	opts := client.DeleteOptions{}
	if f.gracePeriod >= 0 {
		g := int64(f.gracePeriod)
		opts.GracePeriodSeconds = &g
	}
	pending := make([]*evicting, 0, len(l.evict))
	for _, p := range l.evict {
		pending = append(pending, &evicting{pod: p})
	}
	verb := "evicting"
	if f.disableEviction {
		verb = "deleting"
	}
	for len(pending) > 0 {
		now := time.Now()
		left := pending[:0]
		for _, e := range pending {
			m := e.pod.GetMetadata()
			if !e.requested && !now.Before(e.next) {
				if e.next.IsZero() {
					fmt.Fprintf(o.ErrOut, "%s pod %s\n", verb, e.id())
				}
				opts.ResourceVersion = 0
				var err error
				if f.disableEviction {
					_, err = client.For[*v1.Pod](c).Delete(ctx, m.GetNamespace(), m.GetName(), opts)
				} else {
					_, err = c.Evict(ctx, m.GetNamespace(), m.GetName(), opts)
				}
				switch {
				case err == nil || apierrors.IsNotFound(err):
					e.requested = true
				case apierrors.IsTooManyRequests(err):
					e.refusal, e.next = err.Error(), now.Add(evictRetry)
					fmt.Fprintf(o.ErrOut, "error when evicting pods/%q -n %q (will retry after %s): %v\n", m.GetName(), m.GetNamespace(), evictRetry, err)
				default:
					return fmt.Errorf("error when %s pods/%q -n %q: %v", verb, m.GetName(), m.GetNamespace(), err)
				}
			}
			if e.requested {
				cur, err := client.For[*v1.Pod](c).Get(ctx, m.GetNamespace(), m.GetName())
				if apierrors.IsNotFound(err) || (err == nil && cur.GetMetadata().GetUid() != m.GetUid()) {
					word := "evicted"
					if f.disableEviction {
						word = "deleted"
					}
					fmt.Fprintf(o.Out, "pod/%s %s\n", m.GetName(), word)
					continue
				}
				if err != nil {
					return err
				}
				e.pod = cur
			}
			left = append(left, e)
		}
		pending = left
		if len(pending) == 0 {
			break
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %d pod(s): %s", f.timeout, len(pending), holdUps(pending, node))
		}
		if !cli.SleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// holdUps says why each pending pod is not gone yet.
func holdUps(pending []*evicting, node string) string {
	parts := make([]string, len(pending))
	for i, e := range pending {
		switch {
		case !e.requested && e.refusal != "":
			parts[i] = fmt.Sprintf("%s (eviction refused: %s)", e.id(), e.refusal)
		case !e.requested:
			parts[i] = fmt.Sprintf("%s (not evicted yet)", e.id())
		case len(e.pod.GetMetadata().GetFinalizers()) > 0:
			parts[i] = fmt.Sprintf("%s (terminating: waits for finalizers %s)", e.id(), strings.Join(e.pod.GetMetadata().GetFinalizers(), ", "))
		default:
			parts[i] = fmt.Sprintf("%s (terminating: waits for the kubelet on node %s to stop it, grace period %ds)", e.id(), node, e.pod.GetMetadata().GetDeletionGracePeriodSeconds())
		}
	}
	return strings.Join(parts, "; ")
}
