// Package cluster is kubectl's "Cluster Management Commands" group: top,
// cordon, uncordon, drain and taint (certificate goes here too), and
// cluster status (the control plane: apiservers, etcd members, leaders). top reads
// each node's kubelet statistics through the apiserver's relay and shows
// them beside the pods' requests and limits (package allocation); cordon
// and taint change the node's spec; drain cordons and evicts the node's
// pods through Objects.Evict, which checks disruption budgets.
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
	return []*cobra.Command{newTopCommand(o), newCordonCommand(o, true), newCordonCommand(o, false), newDrainCommand(o), newTaintCommand(o), newClusterCommand(o)}
}
