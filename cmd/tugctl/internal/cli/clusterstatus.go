package cli

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// ClusterStatus asks the apiserver for the control plane's status
// (Cluster.Status: apiservers, etcd members, leaders), for tugctl get
// componentstatuses and tugctl cluster status.
func (o *Options) ClusterStatus(ctx context.Context) (*v1.ClusterStatus, error) {
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	return v1.NewClusterClient(c.Conn()).Status(ctx, &v1.ClusterStatusRequest{})
}
