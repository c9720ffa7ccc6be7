// Package certificate is the certificate command: revoke client
// certificates (by serial, by file, or every certificate the apiserver
// issued to a node) and list the node certificates the apiserver issued
// and the revocation list, through Auth.RevokeCertificate and
// Auth.ListCertificates.
package certificate

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newCertificateCommand(o)}
}
