package certificate

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type revokeFlags struct {
	files  []string
	node   string
	reason string
}

func newCertificateCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certificate",
		Short: "Revoke client certificates and list issued and revoked ones",
		Long: `The apiserver refuses a revoked certificate on every request, on every
connection (a watch ends within a bookmark interval, a node's tunnel is
closed). It records the node certificates it signs (join, renewal), so a
node's are revoked by name; any other certificate (made by apiserver pki
init) is revoked by its file or serial.`,
	}
	f := &revokeFlags{}
	revoke := &cobra.Command{
		Use:   "revoke [SERIAL...] [-f CERT.pem]... [--node NODE] [--reason TEXT]",
		Short: "Put certificates on the apiserver's revocation list",
		Example: `  tugctl certificate revoke --node node3 --reason "machine stolen"
  tugctl certificate revoke -f alice.crt
  tugctl certificate revoke 5f3a9c0e1d2b`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRevoke(cmd.Context(), o, args, f) },
	}
	fl := revoke.Flags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "PEM certificate file to revoke (repeatable)")
	fl.StringVar(&f.node, "node", "", "revoke every unexpired certificate the apiserver issued to this node")
	fl.StringVar(&f.reason, "reason", "", "why, kept with the revocation")
	list := &cobra.Command{
		Use:   "list",
		Short: "List issued node certificates and revoked certificates: SERIAL SUBJECT NODE STATUS NOT-AFTER REASON",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runList(cmd.Context(), o) },
	}
	cmd.AddCommand(revoke, list)
	return cmd
}

func runRevoke(ctx context.Context, o *cli.Options, serials []string, f *revokeFlags) error {
	req := &v1.RevokeCertificateRequest{Serials: serials, NodeName: f.node, Reason: f.reason}
	for _, file := range f.files {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("-f: %w", err)
		}
		req.Certificates = append(req.Certificates, b...)
	}
	if len(serials) == 0 && len(f.files) == 0 && f.node == "" {
		return fmt.Errorf("name the certificates to revoke: SERIAL..., -f CERT.pem or --node NODE")
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	resp, err := v1.NewAuthClient(c.Conn()).RevokeCertificate(ctx, req)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	for _, r := range resp.Revoked {
		who := ""
		if r.Subject != "" {
			who = fmt.Sprintf(" (%s)", r.Subject)
		}
		fmt.Fprintf(o.Out, "certificate %s%s revoked\n", r.Serial, who)
	}
	return nil
}

func runList(ctx context.Context, o *cli.Options) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	resp, err := v1.NewAuthClient(c.Conn()).ListCertificates(ctx, &v1.ListCertificatesRequest{})
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	var rows [][]string
	add := func(r *v1.CertificateRecord, status string) {
		rows = append(rows, []string{r.Serial, table.OrNone(r.Subject), table.OrNone(r.NodeName), status, table.OrNone(r.NotAfter), table.OrNone(r.Reason)})
	}
	for _, r := range resp.Issued {
		add(r, "Issued")
	}
	for _, r := range resp.Revoked {
		add(r, "Revoked")
	}
	if len(rows) == 0 {
		fmt.Fprintln(o.ErrOut, "No certificates found")
		return nil
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][3]+rows[i][1]+rows[i][0] < rows[j][3]+rows[j][1]+rows[j][0] })
	printers.WriteRows(o.Out, append([][]string{{"SERIAL", "SUBJECT", "NODE", "STATUS", "NOT-AFTER", "REASON"}}, rows...))
	return nil
}
