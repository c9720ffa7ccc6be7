package describe

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func describeNamespace(ctx context.Context, d *describer, n *v1.Namespace) error {
	d.kv(0, "Name", n.GetMetadata().GetName())
	d.mapLines(0, "Labels", n.GetMetadata().GetLabels(), "=")
	d.mapLines(0, "Annotations", n.GetMetadata().GetAnnotations(), ": ")
	d.kv(0, "Status", cmp.Or(n.GetStatus().GetPhase(), "<unset>"))
	return d.events(ctx, n)
}

// describeServiceAccount is kubectl's: tokens are bound to pods and never
// stored, so there are no mountable or token secrets. Image pull secrets
// are listed one a line, "(not found)" after those missing.
func describeServiceAccount(ctx context.Context, d *describer, sa *v1.ServiceAccount) error {
	d.meta(sa.GetMetadata(), true)
	if len(sa.ImagePullSecrets) == 0 {
		d.kv(0, "Image pull secrets", "<none>")
	}
	secrets := client.For[*v1.Secret](d.c)
	for i, r := range sa.ImagePullSecrets {
		name := r.GetName()
		if _, err := secrets.Get(ctx, sa.GetMetadata().GetNamespace(), name); apierrors.IsNotFound(err) {
			name += " (not found)"
		}
		if i == 0 {
			d.kv(0, "Image pull secrets", name)
		} else {
			d.text(0, "\t%s", name)
		}
	}
	d.kv(0, "Mountable secrets", "<none>")
	d.kv(0, "Tokens", "<none>")
	if sa.AutomountServiceAccountToken != nil {
		d.kv(0, "Automount token", fmt.Sprint(*sa.AutomountServiceAccountToken))
	}
	return d.events(ctx, sa)
}

func describeConfigMap(ctx context.Context, d *describer, c *v1.ConfigMap) error {
	d.meta(c.GetMetadata(), true)
	d.text(0, "")
	d.text(0, "Data")
	d.text(0, "====")
	keys := make([]string, 0, len(c.Data))
	for k := range c.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.text(0, "%s:", k)
		d.text(0, "----")
		d.text(0, "%s", strings.ReplaceAll(c.Data[k], "\t", "    "))
		d.text(0, "")
	}
	if len(c.BinaryData) > 0 {
		d.text(0, "BinaryData")
		d.text(0, "====")
		for k, v := range c.BinaryData {
			d.text(0, "%s: %d bytes", k, len(v))
		}
	}
	return d.events(ctx, c)
}

func describeSecret(ctx context.Context, d *describer, s *v1.Secret) error {
	d.meta(s.GetMetadata(), true)
	d.text(0, "")
	d.kv(0, "Type", s.GetType())
	d.text(0, "")
	d.text(0, "Data")
	d.text(0, "====")
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.kv(0, k, fmt.Sprintf("%d bytes", len(s.Data[k])))
	}
	return d.events(ctx, s)
}
