package describe

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// describeIngressClass is kubectl's IngressClass description: the
// controller, the parameters reference, the events.
func describeIngressClass(ctx context.Context, d *describer, c *v1.IngressClass) error {
	m := c.GetMetadata()
	d.kv(0, "Name", m.GetName())
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	d.kv(0, "Controller", c.GetSpec().GetController())
	if p := c.GetSpec().GetParameters(); p != nil {
		d.text(0, "Parameters:")
		if p.ApiGroup != nil {
			d.kv(1, "APIGroup", p.GetApiGroup())
		}
		d.kv(1, "Kind", p.GetKind())
		d.kv(1, "Name", p.GetName())
		if p.Namespace != nil {
			d.kv(1, "Namespace", p.GetNamespace())
		}
		if p.Scope != nil {
			d.kv(1, "Scope", p.GetScope())
		}
	}
	return d.events(ctx, c)
}
