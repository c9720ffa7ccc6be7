package diagnose

import (
	"context"
	"fmt"
	"sort"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Events returns the events about obj, oldest first: those naming
// it by kind and name, of this incarnation (same uid) or with no uid.
func Events(ctx context.Context, c *client.Client, obj v1.Object) ([]*v1.Event, error) {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return nil, err
	}
	m := obj.GetMetadata()
	sel := fmt.Sprintf("involvedObject.kind=%s,involvedObject.name=%s", k.Name, m.GetName())
	evs, _, err := client.For[*v1.Event](c).List(ctx, client.ListOptions{Namespace: m.GetNamespace(), FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	var mine []*v1.Event
	for _, e := range evs {
		if uid := e.GetInvolvedObject().GetUid(); uid == "" || uid == m.GetUid() || uid == m.GetName() {
			mine = append(mine, e)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return table.EventTime(mine[i]).Before(table.EventTime(mine[j])) })
	return mine, nil
}
