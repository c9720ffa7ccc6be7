package cluster

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/componentstatus"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// newClusterCommand is `tugctl cluster status`: the control plane in
// detail, from the apiserver's Cluster.Status (the same call `tugctl get
// componentstatuses` and kubectl get cs read).
func newClusterCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the control plane's state",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show every apiserver, etcd member and leader of the control plane",
		Long: `Show the control plane as the apiserver that answers sees it: every
apiserver (by the identity Lease each renews in kube-system) with its address
and whether it renews; every etcd member (the apiserver's etcd client asks
each one) with its client URL, whether it leads, its raft index and term,
database size and version, or why it did not answer; and who holds the
scheduler's and the controller-manager's Leases.

Needs get on componentstatuses. tugctl get componentstatuses (cs) shows the
same as Kubernetes' ComponentStatus list; the exit status is 1 when a
component is unhealthy.`,
		Example: `  tugctl cluster status
  tugctl get cs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterStatus(cmd.Context(), o)
		},
	})
	return cmd
}

func runClusterStatus(ctx context.Context, o *cli.Options) error {
	st, err := o.ClusterStatus(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	fmt.Fprintf(o.Out, "APISERVERS (answered by %s)\n", st.AnsweredBy)
	rows := [][]string{{"NAME", "ADDRESS", "HEALTHY", "RENEWED", "ERROR"}}
	for _, a := range st.Apiservers {
		rows = append(rows, []string{a.Name, a.Address, yesNo(a.Healthy), ago(a.RenewTime, now), a.Error})
	}
	printRows(o.Out, rows)
	fmt.Fprintln(o.Out, "\nETCD MEMBERS")
	rows = [][]string{{"NAME", "ID", "CLIENT URL", "LEADER", "RAFT INDEX", "RAFT TERM", "DB SIZE", "VERSION", "HEALTHY", "ERROR"}}
	for _, m := range st.EtcdMembers {
		r := []string{m.Name, m.Id, strings.Join(m.ClientUrls, ","), yesNo(m.Leader), "", "", "", m.Version, yesNo(m.Healthy), m.Error}
		if m.RaftIndex > 0 {
			r[4], r[5], r[6] = strconv.FormatUint(m.RaftIndex, 10), strconv.FormatUint(m.RaftTerm, 10), componentstatus.Bytes(m.DbSize)
		}
		rows = append(rows, r)
	}
	printRows(o.Out, rows)
	fmt.Fprintln(o.Out, "\nLEADERS")
	rows = [][]string{{"COMPONENT", "LEASE", "HOLDER", "RENEWED", "HEALTHY", "ERROR"}}
	for _, l := range st.Leaders {
		rows = append(rows, []string{l.Component, l.Lease, l.Holder, ago(l.RenewTime, now), yesNo(l.Healthy), l.Error})
	}
	printRows(o.Out, rows)
	var bad []string
	for _, it := range componentstatus.Items(st) {
		if !it.Healthy() {
			bad = append(bad, it.Name())
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(o.ErrOut, "unhealthy: %s\n", strings.Join(bad, ", "))
		return cli.ErrReported
	}
	return nil
}

func printRows(w io.Writer, rows [][]string) {
	var a printers.Aligner
	for _, r := range rows {
		a.Fit(r)
	}
	for _, r := range rows {
		a.WriteRow(w, r)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func ago(t *timestamppb.Timestamp, now time.Time) string {
	if t == nil {
		return "<none>"
	}
	return now.Sub(t.AsTime()).Round(time.Second).String() + " ago"
}
