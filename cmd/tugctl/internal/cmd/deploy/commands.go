// Package deploy is kubectl's "Deploy Commands" group — rollout (status,
// history, undo, restart, pause, resume) and scale (autoscale goes here
// too) — and the apply family of its "Advanced Commands": apply, diff,
// kustomize and patch. apply sends kubectl's client-side three-way
// strategic merge patch (last applied manifest, new manifest, live
// object) through Objects.Patch; diff sends the same patch as a
// server-side dry run and shows live against merged; rollout reads a
// deployment's revisions through package revision.
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
	return []*cobra.Command{newApplyCommand(o), newDiffCommand(o), newKustomizeCommand(o), newPatchCommand(o), newRolloutCommand(o), newScaleCommand(o)}
}
