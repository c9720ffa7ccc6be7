// Package token is the token command: create, list and revoke join
// tokens (a new node's kubelet spends one for its certificate) and user
// tokens (bearer tokens for people and scripts). The apiserver makes them
// (Auth.CreateToken) and keeps them as Secrets in kube-system whose
// secret no read returns; tugctl lists and deletes those Secrets.
package token

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newTokenCommand(o)}
}
