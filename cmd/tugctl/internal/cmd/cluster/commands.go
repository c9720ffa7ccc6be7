// Package cluster is kubectl's "Cluster Management Commands" group:
// top today (cordon, uncordon, drain, taint and certificate go here too).
// top reads each node's kubelet statistics through the apiserver's relay
// and shows them beside the pods' requests and limits (package
// allocation).
//
// Each command is a constructor newXCommand(o) that binds its flags to a
// flags struct and calls a function of it and the shared cli.Options.
package cluster

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newTopCommand(o)}
}
