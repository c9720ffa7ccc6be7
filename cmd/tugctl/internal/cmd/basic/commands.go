// Package basic is kubectl's "Basic Commands" group: create (from
// manifests, or generated from flags: deployment, service, configmap,
// secret, namespace, job), get, delete, edit, expose, run, set (image,
// env, resources), wait and explain. They read and write objects through
// the generic object API — edit and set send only what changed, through
// cli.Change — and get prints them through api/table and package
// printers, -w watches them.
//
// Each command is a constructor newXCommand(o) that binds its flags to a
// flags struct and calls runX(ctx, o, args, flags), which does the work
// with the shared cli.Options and returns an error.
package basic

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newCreateCommand(o), newGetCommand(o), newDeleteCommand(o), newExposeCommand(o), newRunCommand(o), newWaitCommand(o), newSetCommand(o), newEditCommand(o), newExplainCommand(o)}
}
