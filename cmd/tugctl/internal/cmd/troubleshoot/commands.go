// Package troubleshoot is kubectl's "Troubleshooting and Debugging
// Commands" group: describe, trace, logs and exec (attach, port-forward,
// cp and events go here too). describe and trace print what packages
// describe and diagnose find; logs and exec stream through the apiserver's
// relay to the pod's kubelet, and share the POD argument's resolution
// (podTarget) and the terminal handling (raw mode, resizes) that attach
// will need as well.
//
// Each command is a constructor newXCommand(o) that binds its flags to a
// flags struct and calls a function of it and the shared cli.Options.
package troubleshoot

import (
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newDescribeCommand(o), newTraceCommand(o), newLogsCommand(o), newExecCommand(o), newAttachCommand(o), newDebugCommand(o), newCpCommand(o), newPortForwardCommand(o), newConsoleCommand(o)}
}
