// Package tugctl is the Tugboat command line, shaped like kubectl. This
// package is its root: it builds the command tree from the command groups
// and runs one command line.
//
// The layout, by concern, so each part has its room:
//
//	cmd/basic          create, get, delete, edit, expose, run, set, wait  (explain)
//	cmd/deploy         apply, diff, kustomize, patch, rollout, scale  (autoscale)
//	cmd/settings       label, annotate
//	cmd/cluster        top, cordon, uncordon, drain, taint  (certificate)
//	cmd/troubleshoot   describe, trace, logs, exec  (attach, port-forward, cp, events)
//	cmd/config, cmd/token, cmd/image, cmd/auth      their commands
//	cli                what commands share: Options (streams, global flags, the
//	                   lazily dialled client, the namespace), naming objects on the
//	                   command line, -f manifests, exit status conventions
//	clientconfig       the config file, contexts, settings, the client's config
//	printers           text tables of api/table's Tables, -o yaml|json|name
//	describe           kubectl-like descriptions (no cobra: a console can show them)
//	diagnose           trace reports and findings (no cobra, no printing)
//	revision, allocation  a deployment's revisions; pods' requests vs allocatable
//
// and outside cmd/: api/table, the columns and cells of every kind, which
// the apiserver can serve as server-side tables without importing the CLI.
//
// The groups are packages, as kubectl groups its commands (basic, deploy,
// cluster management, troubleshooting, settings): with cobra a command is
// just a constructor returning a *cobra.Command, so packages cost nothing
// in wiring (each exports Commands(o), added here), and they keep what a
// group shares private to it (logs, exec and the coming attach and
// port-forward share the POD argument's resolution and the terminal
// handling; rollout and describe deployment share revisions), so a new
// command touches its group and nothing else. Within a group each command
// is "flags -> options struct -> a function": newXCommand binds the flags
// to a struct and calls runX(ctx, o, args, flags), which writes its
// results to o.Out and returns an error.
//
// Run prints "error: ..." and turns any error into exit status 1, so
// scripts can rely on the status; cli.ErrReported (errors already printed)
// and cli.ExitCode (exec's remote status, can-i's no) set it silently.
// Kind names resolve through api/kinds (po, deploy, rs, svc, ...).
package tugctl

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/auth"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/basic"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/certificate"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/cluster"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/config"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/deploy"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/image"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/settings"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/token"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cmd/troubleshoot"
)

// Streams are the command's standard input and outputs.
type Streams = cli.Streams

// Run executes tugctl with args and returns the process exit status.
func Run(ctx context.Context, s Streams, args []string, version string) int {
	return Execute(ctx, &cli.Options{Streams: s, Version: version, Getenv: os.Getenv}, args)
}

// Execute runs one command line with o and returns the exit status: 0, or
// 1 after printing the error.
func Execute(ctx context.Context, o *cli.Options, args []string) int {
	defer o.Close()
	root := NewRootCommand(o)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, cli.ErrReported) {
			return 1
		}
		var ec cli.ExitCode
		if errors.As(err, &ec) {
			return int(ec)
		}
		fmt.Fprintln(o.ErrOut, "error: "+o.ErrorMessage(err))
		return 1
	}
	return 0
}

// NewRootCommand builds the tugctl command tree around o.
func NewRootCommand(o *cli.Options) *cobra.Command {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	root := &cobra.Command{
		Use:   "tugctl",
		Short: "tugctl controls a Tugboat cluster",
		Long: `tugctl controls a Tugboat cluster, the way kubectl controls Kubernetes.

The apiserver address comes from --server, else $TUGBOAT_SERVER, else the
server of the config file's context (~/.tugboat/config; --context, else its
current-context), else 127.0.0.1:6443.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	o.RegisterFlags(root)
	for _, group := range [][]*cobra.Command{
		basic.Commands(o),
		deploy.Commands(o),
		cluster.Commands(o),
		troubleshoot.Commands(o),
		config.Commands(o),
		token.Commands(o),
		certificate.Commands(o),
		image.Commands(o),
		auth.Commands(o),
		settings.Commands(o),
		{newVersionCommand(o), newAPIResourcesCommand(o), newAPIVersionsCommand(o)},
	} {
		root.AddCommand(group...)
	}
	return root
}
