package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type canIFlags struct {
	as       string
	asGroups []string
	verbose  bool
}

func newAuthCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Ask who you are and what you may do",
	}
	f := &canIFlags{}
	canI := &cobra.Command{
		Use:   "can-i VERB KIND[/SUBRESOURCE] [NAME] [-n NS] [--as USER [--as-group G]...] [-v]",
		Short: `Say "yes" (exit 0) or "no" (exit 1): may you (or --as USER) do VERB on KIND`,
		Long: `Ask the apiserver whether an action is allowed, as kubectl auth can-i does.
Prints "yes" and exits 0, or "no" and exits 1 (with the reason when -v).
Asking about another user (--as) needs membership of system:masters.`,
		Example: `  tugctl auth can-i create deployments -n web
  tugctl auth can-i get pods/log
  tugctl auth can-i delete secrets --as alice --as-group dev -v`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCanI(cmd.Context(), o, args, f)
		},
	}
	fl := canI.Flags()
	fl.StringVar(&f.as, "as", "", "ask about this user instead of yourself")
	fl.StringArrayVar(&f.asGroups, "as-group", nil, "a group of the --as user (repeatable)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "on no, say why")
	whoami := &cobra.Command{
		Use:   "whoami",
		Short: "Print the user and groups the apiserver sees you as",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runWhoAmI(cmd.Context(), o) },
	}
	cmd.AddCommand(canI, whoami)
	return cmd
}

func runCanI(ctx context.Context, o *cli.Options, args []string, f *canIFlags) error {
	if len(f.asGroups) > 0 && f.as == "" {
		return fmt.Errorf("--as-group: needs --as USER")
	}
	kind, _, _ := strings.Cut(args[1], "/")
	req := &v1.AccessReviewRequest{Verb: args[0], Resource: args[1], AsUser: f.as, AsGroups: f.asGroups}
	if len(args) == 3 {
		req.Name = args[2]
	}
	// Besides kinds, RBAC names users, groups (impersonate) and
	// certificates (revoke): cluster-wide.
	if _, ok := kinds.NonKindResources[kind]; !ok {
		k, err := cli.LookupKind(kind)
		if err != nil {
			return err
		}
		if req.Namespace, err = o.ObjectNamespace(k); err != nil {
			return err
		}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	resp, err := v1.NewAuthClient(c.Conn()).Review(ctx, req)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	if resp.Allowed {
		// An allowed answer with a reason is a qualified yes: writing RBAC
		// objects is allowed only within what the user holds (the
		// apiserver's escalation check), and can-i says so.
		switch {
		case resp.Reason == "":
			fmt.Fprintln(o.Out, "yes")
		case f.verbose:
			fmt.Fprintf(o.Out, "yes - %s\n", resp.Reason)
		default:
			fmt.Fprintln(o.Out, "yes")
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", resp.Reason)
		}
		return nil
	}
	if f.verbose && resp.Reason != "" {
		fmt.Fprintf(o.Out, "no - %s\n", resp.Reason)
	} else {
		fmt.Fprintln(o.Out, "no")
	}
	return cli.ExitCode(1)
}

func runWhoAmI(ctx context.Context, o *cli.Options) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	u, err := v1.NewAuthClient(c.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	rows := [][]string{
		{"ATTRIBUTE", "VALUE"},
		{"Username", u.Name},
		{"Groups", "[" + strings.Join(u.Groups, " ") + "]"},
		{"Method", u.Method},
	}
	printers.WriteRows(o.Out, rows)
	return nil
}
