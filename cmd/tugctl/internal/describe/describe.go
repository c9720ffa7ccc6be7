// Package describe writes kubectl-like descriptions of objects: per kind,
// sections of "Key:  value" lines aligned in blocks (pods with their
// containers, states, probes, mounts, conditions and tolerations; nodes
// with their lease, conditions, capacity and their pods' requests against
// the allocatable; deployments with their old and new replica sets;
// Services with their endpoints and, when none is ready, why), then the
// object's events. Kinds without their own sections get their metadata and
// every other field as YAML.
//
// It reads related objects through the client it is given and writes text
// to an io.Writer; it knows nothing of cobra, so the CLI and a console can
// both show it. Why a Service has no endpoint comes from package diagnose,
// the columns' wording (ages, statuses, roles) from api/table.
package describe

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
)

// describeFunc writes the description of one object. It may read related
// objects (a deployment's replica sets, a node's pods) through d.c.
type describeFunc func(ctx context.Context, d *describer, obj v1.Object) error

// describers are the per-kind descriptions; kinds without one get
// describeGeneric. Later features (probes, networking, tracing) enrich an
// entry or add one here.
func describers() map[string]describeFunc {
	return map[string]describeFunc{
		"Pod":                     typedDescribe(describePod),
		"Node":                    typedDescribe(describeNode),
		"Namespace":               typedDescribe(describeNamespace),
		"Service":                 typedDescribe(describeService),
		"ConfigMap":               typedDescribe(describeConfigMap),
		"ServiceAccount":          typedDescribe(describeServiceAccount),
		"LimitRange":              typedDescribe(describeLimitRange),
		"ResourceQuota":           typedDescribe(describeResourceQuota),
		"Secret":                  typedDescribe(describeSecret),
		"Deployment":              typedDescribe(describeDeployment),
		"ReplicaSet":              typedDescribe(describeReplicaSet),
		"Job":                     typedDescribe(describeJob),
		"CronJob":                 typedDescribe(describeCronJob),
		"EndpointSlice":           typedDescribe(describeEndpointSlice),
		"NetworkPolicy":           typedDescribe(describeNetworkPolicy),
		"IngressClass":            typedDescribe(describeIngressClass),
		"Ingress":                 typedDescribe(describeIngress),
		"PodDisruptionBudget":     typedDescribe(describePDB),
		"HorizontalPodAutoscaler": typedDescribe(describeHPA),
		"DaemonSet":               typedDescribe(describeDaemonSet),
		"StatefulSet":             typedDescribe(describeStatefulSet),
		"PersistentVolume":        typedDescribe(describePV),
		"PersistentVolumeClaim":   typedDescribe(describePVC),
		"StorageClass":            typedDescribe(describeStorageClass),
	}
}

func typedDescribe[T v1.Object](f func(context.Context, *describer, T) error) describeFunc {
	return func(ctx context.Context, d *describer, o v1.Object) error { return f(ctx, d, o.(T)) }
}

// Object writes the description of obj, as `kubectl describe` does: its
// kind's sections (or describeGeneric's), then, with showEvents, its
// events. It reads related objects (a deployment's replica sets, a node's
// pods, a Service's endpoints) through c.
func Object(ctx context.Context, w io.Writer, c *client.Client, obj v1.Object, showEvents bool) error {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return err
	}
	d := newDescriber(w, c, showEvents)
	fn := describers()[k.Name]
	if fn == nil {
		fn = describeGeneric
	}
	err = fn(ctx, d, obj)
	if ferr := d.flush(); err == nil {
		err = ferr
	}
	return err
}

// PodTemplate writes a pod template's labels, annotations, containers and
// volumes, indented one level (rollout history --revision).
func PodTemplate(w io.Writer, t *v1.PodTemplateSpec) error {
	d := newDescriber(w, nil, false)
	d.podTemplate(1, t)
	return d.flush()
}

// describer writes "Key:\tvalue" lines through a tabwriter, so values
// line up within each block of lines, as kubectl's do.
type describer struct {
	c          *client.Client
	tw         *tabwriter.Writer
	now        time.Time
	showEvents bool
}

func newDescriber(w io.Writer, c *client.Client, showEvents bool) *describer {
	return &describer{c: c, tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0), now: time.Now(), showEvents: showEvents}
}

func (d *describer) flush() error { return d.tw.Flush() }

// kv writes "key:\tvalue" at an indentation level (two spaces each).
func (d *describer) kv(level int, key string, value any) {
	fmt.Fprintf(d.tw, "%s%s:\t%v\n", strings.Repeat("  ", level), key, value)
}

// text writes a line as it is at an indentation level; tabs separate cells.
func (d *describer) text(level int, format string, args ...any) {
	fmt.Fprintf(d.tw, "%s%s\n", strings.Repeat("  ", level), fmt.Sprintf(format, args...))
}

// mapLines writes a map as "key:\tk=v" with one entry per line, or <none>.
func (d *describer) mapLines(level int, key string, m map[string]string, sep string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != v1.LastAppliedAnnotation {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		d.kv(level, key, "<none>")
		return
	}
	for i, k := range keys {
		label := key + ":"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(d.tw, "%s%s\t%s%s%s\n", strings.Repeat("  ", level), label, k, sep, m[k])
	}
}

// meta writes the common metadata lines.
func (d *describer) meta(m *v1.ObjectMeta, namespaced bool) {
	d.kv(0, "Name", m.GetName())
	if namespaced {
		d.kv(0, "Namespace", m.GetNamespace())
	}
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	d.kv(0, "CreationTimestamp", timeString(m.GetCreationTimestamp()))
	if ts := m.GetDeletionTimestamp(); ts != nil {
		d.kv(0, "DeletionTimestamp", timeString(ts))
	}
	if len(m.GetFinalizers()) > 0 {
		d.kv(0, "Finalizers", "["+strings.Join(m.GetFinalizers(), " ")+"]")
	}
}

// controlledBy writes "Controlled By:\tKind/name" for an owned object.
func (d *describer) controlledBy(m *v1.ObjectMeta) {
	for _, r := range m.GetOwnerReferences() {
		if r.Controller {
			d.kv(0, "Controlled By", r.Kind+"/"+r.Name)
		}
	}
}

// conditions writes a Conditions table with the given columns.
func (d *describer) conditions(conds []*v1.Condition, withReason bool) {
	if len(conds) == 0 {
		return
	}
	d.text(0, "Conditions:")
	if withReason {
		d.text(1, "Type\tStatus\tReason")
		d.text(1, "----\t------\t------")
	} else {
		d.text(1, "Type\tStatus")
		d.text(1, "----\t------")
	}
	for _, c := range conds {
		if withReason {
			d.text(1, "%s\t%s\t%s", c.Type, c.Status, cmp.Or(c.Reason, ""))
		} else {
			d.text(1, "%s\t%s", c.Type, c.Status)
		}
	}
}

// events lists the events about obj, oldest first.
func (d *describer) events(ctx context.Context, obj v1.Object) error {
	if !d.showEvents {
		return nil
	}
	mine, err := diagnose.Events(ctx, d.c, obj)
	if err != nil {
		return err
	}
	if len(mine) == 0 {
		d.kv(0, "Events", "<none>")
		return nil
	}
	d.text(0, "Events:")
	d.text(1, "Type\tReason\tAge\tFrom\tMessage")
	d.text(1, "----\t------\t----\t----\t-------")
	for _, e := range mine {
		a := table.HumanDuration(d.now.Sub(table.EventTime(e)))
		if e.Count > 1 && e.GetFirstTimestamp() != nil {
			a = fmt.Sprintf("%s (x%d over %s)", a, e.Count, table.HumanDuration(d.now.Sub(e.FirstTimestamp.AsTime())))
		}
		d.text(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, a, cmp.Or(e.GetSource().GetComponent(), e.ReportingComponent), e.Message)
	}
	return nil
}

// timeString is kubectl's describe time format, or <unset>.
func timeString(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "<unset>"
	}
	return ts.AsTime().Local().Format(time.RFC1123Z)
}

// describeGeneric is metadata, then every other field as YAML, then events.
func describeGeneric(ctx context.Context, d *describer, obj v1.Object) error {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return err
	}
	d.meta(obj.GetMetadata(), k.Namespaced)
	m, err := manifest.ToMap(obj)
	if err != nil {
		return err
	}
	for _, key := range []string{"apiVersion", "kind", "metadata"} {
		delete(m, key)
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		d.text(0, "%s:", strings.ToUpper(key[:1])+key[1:])
		out, err := manifest.MarshalValue(m[key])
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			d.text(1, "%s", line)
		}
	}
	return d.events(ctx, obj)
}
