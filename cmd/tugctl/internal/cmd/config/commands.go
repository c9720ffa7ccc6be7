// Package config is the config command: view and edit the config file's
// clusters, users and contexts (package clientconfig reads and writes the
// file). The set-* commands change only the flags given.
package config

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newConfigCommand(o)}
}
