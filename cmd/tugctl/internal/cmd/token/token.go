package token

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// Token Secrets, as the apiserver keeps them (api/tokens): join tokens
// are spent by JoinNode, user tokens are bearer tokens until their Secret
// is deleted or they expire. Only the apiserver makes them
// (Auth.CreateToken); tugctl lists and deletes their Secrets.
const (
	tokenNamespace  = tokens.Namespace
	joinTokenType   = tokens.BootstrapTokenType
	joinTokenPrefix = tokens.JoinPrefix
	userTokenType   = tokens.UserTokenType
	userTokenPrefix = tokens.UserPrefix
	defaultJoinTTL  = time.Hour
)

type tokenFlags struct {
	ttl         time.Duration
	description string
	user        string
	groups      []string
	replace     string
}

func newTokenCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke join tokens and user tokens",
		Long: `Tokens are "<id>.<secret>" (6 and 16 lower-case letters and digits), made by
the apiserver and kept (the secret only as a hash) as Secrets in kube-system
that no read returns the secret of. A join token lets a new node's kubelet get
its certificate once (tugctl token create); it may not take the name of a
node that is running or holds a live certificate unless made with --replace.
A user token (--user) is a bearer token for a person or a script, valid until
it is deleted or its --ttl passes.`,
	}
	f := &tokenFlags{}
	create := &cobra.Command{
		Use:   "create [--ttl 1h] [--description TEXT] [--replace NODE] | --user NAME [--groups a,b] [--ttl 720h]",
		Short: "Create a join token, or a user token with --user, and print it",
		Example: `  tugctl token create --ttl 2h --description "rack 4"
  tugctl token create --replace node3          # the machine behind node3 is replaced
  tugctl token create --user ci --groups deployers --ttl 720h > ci.token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.user == "" && cmd.Flags().Changed("groups") {
				return fmt.Errorf("--groups: only for user tokens (--user NAME)")
			}
			if f.user != "" && f.replace != "" {
				return fmt.Errorf("--replace: only for join tokens")
			}
			if f.user != "" && !cmd.Flags().Changed("ttl") {
				f.ttl = 0 // user tokens do not expire unless asked
			}
			return runTokenCreate(cmd.Context(), o, f)
		},
	}
	fl := create.Flags()
	fl.DurationVar(&f.ttl, "ttl", defaultJoinTTL, "how long the token stays valid (0: never expires; user tokens default to 0)")
	fl.StringVar(&f.description, "description", "", "what the token is for, shown by token list")
	fl.StringVar(&f.user, "user", "", "make a user token authenticating as this user")
	fl.StringSliceVar(&f.groups, "groups", nil, "groups of the user token's user (comma separated)")
	fl.StringVar(&f.replace, "replace", "", "a join token that may take this node's name although a node holds it: the old machine's certificates are revoked when it is used")
	cmd.AddCommand(create,
		&cobra.Command{
			Use:   "list",
			Short: "List tokens: ID TYPE USER GROUPS EXPIRES DESCRIPTION",
			Args:  cobra.NoArgs,
			RunE:  func(cmd *cobra.Command, _ []string) error { return runTokenList(cmd.Context(), o) },
		},
		&cobra.Command{
			Use:   "delete ID...",
			Short: "Revoke tokens (by ID, or the whole token)",
			Args:  cobra.MinimumNArgs(1),
			RunE:  func(cmd *cobra.Command, args []string) error { return runTokenDelete(cmd.Context(), o, args) },
		},
	)
	return cmd
}

func runTokenCreate(ctx context.Context, o *cli.Options, f *tokenFlags) error {
	if f.ttl < 0 {
		return fmt.Errorf("--ttl %v: must be 0 (never expires) or more", f.ttl)
	}
	if f.ttl > 0 && f.ttl < time.Second {
		return fmt.Errorf("--ttl %v: must be at least 1s", f.ttl)
	}
	for i, g := range f.groups {
		if g == "" {
			return fmt.Errorf("--groups[%d]: empty group name", i)
		}
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	req := &v1.CreateTokenRequest{Type: "join", TtlSeconds: int64(f.ttl / time.Second), Description: f.description, ReplaceNode: f.replace}
	if f.user != "" {
		req.Type, req.User, req.Groups = "user", f.user, f.groups
	}
	resp, err := v1.NewAuthClient(c.Conn()).CreateToken(ctx, req)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	fmt.Fprintln(o.Out, resp.Token)
	if f.user != "" {
		until := "until it is deleted"
		if resp.Expiration != "" {
			until = "until " + resp.Expiration
		}
		fmt.Fprintf(o.ErrOut, "User token %s for %q, valid %s: this is the only time it is printed. Revoke it with: tugctl token delete %s\n", resp.Id, f.user, until, resp.Id)
	}
	return nil
}

func runTokenList(ctx context.Context, o *cli.Options) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	list, _, err := client.For[*v1.Secret](c).List(ctx, client.ListOptions{Namespace: tokenNamespace})
	if err != nil {
		return err
	}
	now := time.Now()
	var rows [][]string
	for _, s := range list {
		name := s.GetMetadata().GetName()
		switch {
		case s.Type == joinTokenType && strings.HasPrefix(name, joinTokenPrefix):
			desc := string(s.Data[tokens.DataDescription])
			if n := string(s.Data[tokens.DataReplaceNode]); n != "" {
				desc = strings.TrimSuffix("replaces node "+n+"; "+desc, "; ")
			}
			rows = append(rows, []string{strings.TrimPrefix(name, joinTokenPrefix), "join", "<none>", "<none>", tokenExpiry(string(s.Data[tokens.DataExpiration]), now), table.OrNone(desc)})
		case s.Type == userTokenType && strings.HasPrefix(name, userTokenPrefix):
			rows = append(rows, []string{strings.TrimPrefix(name, userTokenPrefix), "user", table.OrNone(string(s.Data[tokens.DataUser])), table.OrNone(string(s.Data[tokens.DataGroups])),
				tokenExpiry(string(s.Data[tokens.DataExpiration]), now), table.OrNone(string(s.Data[tokens.DataDescription]))})
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(o.ErrOut, "No tokens found")
		return nil
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][1]+rows[i][0] < rows[j][1]+rows[j][0] })
	rows = append([][]string{{"ID", "TYPE", "USER", "GROUPS", "EXPIRES", "DESCRIPTION"}}, rows...)
	printers.WriteRows(o.Out, rows)
	return nil
}

// tokenExpiry is the EXPIRES cell: "never", "2026-12-01T10:00:00Z (in
// 59m)" or "... (expired)".
func tokenExpiry(exp string, now time.Time) string {
	if exp == "" {
		return "never"
	}
	t, err := time.Parse(time.RFC3339, exp)
	if err != nil {
		return exp + " (invalid)"
	}
	if !now.Before(t) {
		return exp + " (expired)"
	}
	return fmt.Sprintf("%s (in %s)", exp, table.HumanDuration(t.Sub(now)))
}

func runTokenDelete(ctx context.Context, o *cli.Options, args []string) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	secrets := client.For[*v1.Secret](c)
	failed := false
	for _, arg := range args {
		id, _, _ := strings.Cut(arg, ".") // a whole token names its ID too
		deleted, err := deleteToken(ctx, secrets, id)
		if err != nil {
			return err
		}
		if !deleted {
			fmt.Fprintf(o.ErrOut, "Error from server (NotFound): token %q not found\n", id)
			failed = true
			continue
		}
		fmt.Fprintf(o.Out, "token %q deleted\n", id)
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// deleteToken deletes the user or join token id, checking the Secret is
// one (a compare-and-swap delete of the version read).
func deleteToken(ctx context.Context, secrets *client.Typed[*v1.Secret], id string) (bool, error) {
	for _, kind := range []struct{ prefix, typ string }{{userTokenPrefix, userTokenType}, {joinTokenPrefix, joinTokenType}} {
		s, err := secrets.Get(ctx, tokenNamespace, kind.prefix+id)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		if s.Type != kind.typ {
			continue
		}
		_, err = secrets.Delete(ctx, tokenNamespace, s.Metadata.Name, client.DeleteOptions{ResourceVersion: s.Metadata.ResourceVersion})
		if apierrors.IsNotFound(err) {
			continue
		}
		return err == nil, err
	}
	return false, nil
}
