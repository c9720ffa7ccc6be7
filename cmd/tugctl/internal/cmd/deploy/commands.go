// Package deploy is kubectl's "Deploy Commands" group: apply, rollout
// (status, history, undo, restart, pause, resume) and scale (autoscale
// goes here too). apply merges manifests into stored objects with
// compare-and-swap updates; rollout reads a deployment's revisions through
// package revision.
//
// Each command is a constructor newXCommand(o) that binds its flags to a
// flags struct and calls a function of it and the shared cli.Options.
package deploy

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newApplyCommand(o), newRolloutCommand(o), newScaleCommand(o)}
}
