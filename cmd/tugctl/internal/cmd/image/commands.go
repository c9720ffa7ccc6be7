// Package image is the image command: import OCI or docker-archive
// tarballs into the nodes' container runtime (for clusters without a
// registry) and list the images nodes hold, through the apiserver's relay
// to each node's kubelet.
package image

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newImageCommand(o)}
}
