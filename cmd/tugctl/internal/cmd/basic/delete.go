package basic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type deleteFlags struct {
	cli.FileFlags
	selector       string
	all            bool
	gracePeriod    int64
	now            bool
	force          bool
	cascade        string
	wait           bool
	timeout        time.Duration
	ignoreNotFound bool
	dryRun         cli.DryRun
}

func newDeleteCommand(o *cli.Options) *cobra.Command {
	f := &deleteFlags{}
	cmd := &cobra.Command{
		Use:   "delete KIND NAME... | KIND/NAME... | -f FILE | KIND -l SELECTOR | KIND --all",
		Short: "Delete objects and wait until they are gone",
		Long: `Delete objects by name, by manifest or by label selector.

By default tugctl waits until each object is gone (a pod on a node first
gets its grace period to stop); --wait=false returns once the delete is
accepted. --cascade says what happens to the objects an object owns:
background (default: the garbage collector deletes them afterwards),
foreground (they go first) or orphan (they are kept).`,
		Example: `  tugctl delete pod nginx
  tugctl delete deploy/nginx --cascade=orphan
  tugctl delete -f nginx.yaml
  tugctl delete pods -l app=nginx --grace-period=0`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDelete(cmd.Context(), o, args, f)
		},
	}
	fl := cmd.Flags()
	f.FileFlags.Register(cmd, "naming the objects to delete")
	f.FileFlags.RegisterKustomize(cmd, "naming the objects to delete")
	fl.StringVarP(&f.selector, "selector", "l", "", "delete the objects of KIND matching this label selector")
	fl.BoolVar(&f.all, "all", false, "delete every object of KIND in the namespace")
	fl.Int64Var(&f.gracePeriod, "grace-period", -1, "seconds a pod gets to stop; -1 uses the pod's own, 0 deletes at once")
	fl.BoolVar(&f.now, "now", false, "same as --grace-period=1")
	fl.BoolVar(&f.force, "force", false, "same as --grace-period=0: do not wait for the kubelet to confirm the pod stopped")
	fl.StringVar(&f.cascade, "cascade", "background", "background, foreground or orphan")
	fl.BoolVar(&f.wait, "wait", true, "wait until the objects are gone")
	fl.DurationVar(&f.timeout, "timeout", 0, "how long to wait for each object to go (0: its grace period plus a minute)")
	fl.BoolVar(&f.ignoreNotFound, "ignore-not-found", false, "treat objects that do not exist as deleted")
	cli.RegisterDryRun(cmd, &f.dryRun)
	return cmd
}

// propagation maps --cascade to the API's propagation policy.
func propagation(cascade string) (string, error) {
	switch strings.ToLower(cascade) {
	case "background", "true", "":
		return "Background", nil
	case "foreground":
		return "Foreground", nil
	case "orphan", "false":
		return "Orphan", nil
	}
	return "", fmt.Errorf("--cascade %q: want background, foreground or orphan", cascade)
}

func runDelete(ctx context.Context, o *cli.Options, args []string, f *deleteFlags) error {
	policy, err := propagation(f.cascade)
	if err != nil {
		return err
	}
	opts := client.DeleteOptions{PropagationPolicy: policy}
	switch {
	case f.force:
		opts.GracePeriodSeconds = ptr(int64(0))
		fmt.Fprintln(o.ErrOut, "Warning: immediate deletion does not wait for confirmation that the running containers have stopped.")
	case f.now:
		opts.GracePeriodSeconds = ptr(int64(1))
	case f.gracePeriod >= 0:
		opts.GracePeriodSeconds = ptr(f.gracePeriod)
	}
	targets, err := deleteTargets(ctx, o, args, f)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		fmt.Fprintln(o.ErrOut, "No resources found")
		return nil
	}
	failed := false
	for _, t := range targets {
		err := deleteOne(ctx, o, t, opts, f)
		if errors.Is(err, apierrors.ErrUnavailable) {
			return err
		}
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: %v\n", err)
			failed = true
		}
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// deleteTarget is one object to delete.
type deleteTarget struct {
	kind      *kinds.Kind
	namespace string
	name      string
}

// deleteTargets resolves the command line into objects: named ones, the
// objects of -f manifests, or those of a kind matching -l / --all.
func deleteTargets(ctx context.Context, o *cli.Options, args []string, f *deleteFlags) ([]deleteTarget, error) {
	var out []deleteTarget
	if len(f.Files) > 0 || f.Kustomize != "" {
		if len(args) > 0 || f.selector != "" || f.all {
			return nil, fmt.Errorf("-f and -k name the objects themselves: give no KIND, NAME, -l or --all with them")
		}
		objs, err := o.ReadInput(f.FileFlags)
		if err != nil {
			return nil, err
		}
		for _, mo := range objs {
			if err := o.PlaceObject(mo); err != nil {
				return nil, err
			}
			m := mo.Object.GetMetadata()
			out = append(out, deleteTarget{mo.Kind, m.GetNamespace(), m.GetName()})
		}
		return out, nil
	}
	ra, err := cli.ParseResourceArgs(args)
	if err != nil {
		return nil, err
	}
	if ra.Named() {
		if f.selector != "" || f.all {
			return nil, fmt.Errorf("name objects or select them with -l/--all, not both")
		}
		for _, r := range ra.Refs {
			ns, err := o.ObjectNamespace(r.Kind)
			if err != nil {
				return nil, err
			}
			out = append(out, deleteTarget{r.Kind, ns, r.Name})
		}
		return out, nil
	}
	if f.selector == "" && !f.all {
		return nil, fmt.Errorf("name the objects to delete, or select them with -l SELECTOR or --all")
	}
	for _, k := range ra.Kinds {
		api, err := o.API(k)
		if err != nil {
			return nil, err
		}
		ns, err := o.ListNamespace(k)
		if err != nil {
			return nil, err
		}
		objs, _, err := api.List(ctx, client.ListOptions{Namespace: ns, LabelSelector: f.selector})
		if err != nil {
			return nil, err
		}
		cli.SortObjects(objs)
		for _, obj := range objs {
			m := obj.GetMetadata()
			out = append(out, deleteTarget{k, m.GetNamespace(), m.GetName()})
		}
	}
	return out, nil
}

func deleteOne(ctx context.Context, o *cli.Options, t deleteTarget, opts client.DeleteOptions, f *deleteFlags) error {
	api, err := o.WriteAPI(t.kind, f.dryRun)
	if err != nil {
		return err
	}
	var obj v1.Object
	if f.dryRun == cli.DryRunClient {
		obj, err = api.Get(ctx, t.namespace, t.name) // it must exist; nothing is sent
	} else {
		obj, err = api.Delete(ctx, t.namespace, t.name, opts)
	}
	if apierrors.IsNotFound(err) {
		if f.ignoreNotFound {
			return nil
		}
		return fmt.Errorf("%s %q not found", printers.QualifiedPlural(t.kind), t.name)
	}
	if err != nil {
		return fmt.Errorf("deleting %s %q: %w", printers.QualifiedPlural(t.kind), t.name, err)
	}
	fmt.Fprintf(o.Out, "%s %q deleted%s\n", printers.ResourceName(t.kind), t.name, f.dryRun.Suffix())
	if !f.wait || f.dryRun.On() {
		return nil
	}
	timeout := f.timeout
	if timeout == 0 {
		timeout = time.Duration(obj.GetMetadata().GetDeletionGracePeriodSeconds())*time.Second + time.Minute
	}
	return waitGone(ctx, api, obj, timeout)
}

// waitGone waits until obj (this incarnation: same uid) no longer exists,
// watching from the version last read.
func waitGone(ctx context.Context, api *client.Typed[v1.Object], obj v1.Object, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m := obj.GetMetadata()
	last := obj
	for {
		if ctx.Err() != nil {
			return fmt.Errorf("timed out after %v waiting for %s %q to be deleted%s", timeout, printers.ResourceName(api.Kind()), m.GetName(), pendingReason(last))
		}
		cur, err := api.Get(ctx, m.GetNamespace(), m.GetName())
		if apierrors.IsNotFound(err) || (err == nil && cur.GetMetadata().GetUid() != m.GetUid()) {
			return nil
		}
		if err != nil {
			cli.SleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		last = cur
		w, err := api.Watch(ctx, client.WatchOptions{
			Namespace: m.GetNamespace(), FieldSelector: "metadata.name=" + m.GetName(),
			ResourceVersion: cur.GetMetadata().GetResourceVersion(),
		})
		if err != nil {
			cli.SleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		for {
			ev, err := w.Next()
			if err != nil {
				break // re-read and re-watch, or time out
			}
			if ev.Object == nil {
				continue
			}
			if ev.Type == "DELETED" && ev.Object.GetMetadata().GetUid() == m.GetUid() {
				w.Stop()
				return nil
			}
			last = ev.Object
		}
		w.Stop()
	}
}

// pendingReason says why an object is still there, when it can tell.
func pendingReason(obj v1.Object) string {
	if obj == nil {
		return ""
	}
	m := obj.GetMetadata()
	if len(m.GetFinalizers()) > 0 {
		return fmt.Sprintf(" (waiting for finalizers %s)", strings.Join(m.GetFinalizers(), ", "))
	}
	if p, ok := obj.(*v1.Pod); ok && p.GetSpec().GetNodeName() != "" {
		return fmt.Sprintf(" (waiting for the kubelet on %s to stop it; --grace-period=0 --force skips that)", p.Spec.NodeName)
	}
	return ""
}

func ptr[T any](v T) *T { return &v }
