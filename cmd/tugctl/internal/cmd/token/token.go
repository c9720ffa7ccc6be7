package token

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
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

// Token Secrets, as the apiserver's authenticator reads them
// (api/tokens): join tokens are spent by JoinNode, user tokens are
// bearer tokens until their Secret is deleted.
const (
	tokenNamespace   = tokens.Namespace
	joinTokenType    = tokens.BootstrapTokenType
	joinTokenPrefix  = "bootstrap-token-"
	userTokenType    = tokens.UserTokenType
	userTokenPrefix  = "token-"
	tokenAlphabet    = "abcdefghijklmnopqrstuvwxyz0123456789"
	defaultJoinTTL   = time.Hour
	tokenIDLength    = 6
	tokenSecretLen   = 16
	tokenCreateTries = 3
)

type tokenFlags struct {
	ttl         time.Duration
	description string
	user        string
	groups      []string
}

func newTokenCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke join tokens and user tokens",
		Long: `Tokens are "<id>.<secret>" (6 and 16 lower-case letters and digits), kept as
Secrets in kube-system. A join token lets a new node's kubelet get its
certificate once (tugctl token create); a user token (--user) is a bearer
token for a person or a script, valid until it is deleted.`,
	}
	f := &tokenFlags{}
	create := &cobra.Command{
		Use:   "create [--ttl 1h] [--description TEXT] | --user NAME [--groups a,b]",
		Short: "Create a join token, or a user token with --user, and print it",
		Example: `  tugctl token create --ttl 2h --description "rack 4"
  tugctl token create --user ci --groups deployers > ci.token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.user != "" && cmd.Flags().Changed("ttl") {
				return fmt.Errorf("--ttl: user tokens do not expire; revoke one with tugctl token delete ID")
			}
			if f.user == "" && cmd.Flags().Changed("groups") {
				return fmt.Errorf("--groups: only for user tokens (--user NAME)")
			}
			return runTokenCreate(cmd.Context(), o, f)
		},
	}
	fl := create.Flags()
	fl.DurationVar(&f.ttl, "ttl", defaultJoinTTL, "how long the join token stays valid (0: never expires)")
	fl.StringVar(&f.description, "description", "", "what the token is for, shown by token list")
	fl.StringVar(&f.user, "user", "", "make a user token authenticating as this user")
	fl.StringSliceVar(&f.groups, "groups", nil, "groups of the user token's user (comma separated)")
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

// randomToken is n characters of tokenAlphabet from crypto/rand.
func randomToken(n int) (string, error) {
	b := make([]byte, n)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for i := range b {
		x, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b[i] = tokenAlphabet[x.Int64()]
	}
	return string(b), nil
}

// tokenSecret is the Secret holding token id.secret as f describes it.
func tokenSecret(id, secret string, f *tokenFlags, now time.Time) *v1.Secret {
	data := map[string][]byte{"token-id": []byte(id), "token-secret": []byte(secret)}
	if f.description != "" {
		data["description"] = []byte(f.description)
	}
	if f.user != "" {
		data["user"] = []byte(f.user)
		if len(f.groups) > 0 {
			data["groups"] = []byte(strings.Join(f.groups, ","))
		}
		return &v1.Secret{Metadata: &v1.ObjectMeta{Name: userTokenPrefix + id, Namespace: tokenNamespace}, Type: userTokenType, Data: data}
	}
	if f.ttl > 0 {
		data["expiration"] = []byte(now.Add(f.ttl).UTC().Format(time.RFC3339))
	}
	return &v1.Secret{Metadata: &v1.ObjectMeta{Name: joinTokenPrefix + id, Namespace: tokenNamespace}, Type: joinTokenType, Data: data}
}

func runTokenCreate(ctx context.Context, o *cli.Options, f *tokenFlags) error {
	if f.ttl < 0 {
		return fmt.Errorf("--ttl %v: must be 0 (never expires) or more", f.ttl)
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
	secrets := client.For[*v1.Secret](c)
	for try := 1; ; try++ {
		id, err := randomToken(tokenIDLength)
		if err != nil {
			return err
		}
		secret, err := randomToken(tokenSecretLen)
		if err != nil {
			return err
		}
		_, err = secrets.Create(ctx, tokenSecret(id, secret, f, time.Now()))
		if apierrors.IsAlreadyExists(err) && try < tokenCreateTries {
			continue // an ID collision: draw again
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s.%s\n", id, secret)
		if f.user != "" {
			fmt.Fprintf(o.ErrOut, "User token %s for %q: this is the only time it is printed. Revoke it with: tugctl token delete %s\n", id, f.user, id)
		}
		return nil
	}
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
			rows = append(rows, []string{strings.TrimPrefix(name, joinTokenPrefix), "join", "<none>", "<none>", tokenExpiry(string(s.Data["expiration"]), now), table.OrNone(string(s.Data["description"]))})
		case s.Type == userTokenType && strings.HasPrefix(name, userTokenPrefix):
			rows = append(rows, []string{strings.TrimPrefix(name, userTokenPrefix), "user", table.OrNone(string(s.Data["user"])), table.OrNone(string(s.Data["groups"])), "never", table.OrNone(string(s.Data["description"]))})
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
