package ingress

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/leaderelection"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// runStatus campaigns for the status Lease and, while holding it, keeps
// every served Ingress's status.loadBalancer equal to the nodes'
// addresses and writes the Ingresses' Events (report). Losing the Lease ends the term; the campaign starts again.
func (c *Controller) runStatus(ctx context.Context) error {
	identity := fmt.Sprintf("%s_%d", c.cfg.NodeName, os.Getpid())
	for ctx.Err() == nil {
		err := leaderelection.Run(ctx, c.cfg.Client, leaderelection.Config{Name: StatusLease, Identity: identity, Logger: c.log},
			c.writeStatus)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("ingress status election", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	return nil
}

// writeStatus is the leader's loop: on every rebuild or node change, and
// every minute, write the addresses into the Ingresses that differ.
func (c *Controller) writeStatus(ctx context.Context) {
	c.log.Info("writing ingress status and events", "lease", "kube-system/"+StatusLease)
	c.setLeading(true)
	defer c.setLeading(false)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	ings := client.For[*v1.Ingress](c.cfg.Client)
	for {
		want := &v1.IngressLoadBalancerStatus{Ingress: addresses(c.cfg.Source.Nodes())}
		for _, ing := range c.table.Load().served {
			if proto.Equal(ing.GetStatus().GetLoadBalancer(), want) || (len(want.Ingress) == 0 && len(ing.GetStatus().GetLoadBalancer().GetIngress()) == 0) {
				continue
			}
			_, err := ings.Mutate(ctx, ing.GetMetadata().GetNamespace(), ing.GetMetadata().GetName(), true, func(i *v1.Ingress) error {
				i.Status = &v1.IngressStatus{LoadBalancer: proto.Clone(want).(*v1.IngressLoadBalancerStatus)}
				return nil
			})
			if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
				c.log.Warn("ingress status", "ingress", v1.Key(ing), "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.status:
		case <-tick.C:
		}
	}
}
