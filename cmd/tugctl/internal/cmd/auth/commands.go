// Package auth is the auth command: can-i (the apiserver's access
// review: may you, or --as USER, do VERB on KIND) and whoami (who the
// apiserver sees you as).
package auth

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newAuthCommand(o)}
}
