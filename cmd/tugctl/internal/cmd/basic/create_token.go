package basic

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// tokenOptions are kubectl create token's flags: a token of a service
// account from the serviceaccounts/token subresource (a TokenRequest).
type tokenOptions struct {
	name, namespace string
	duration        time.Duration
	audiences       []string
	boundKind       string
	boundName       string
	boundUID        string
	output          string
}

// boundObjectKinds are the kinds a token may be bound to, with their
// apiVersion (kubectl's list).
var boundObjectKinds = map[string]string{"Node": "v1", "Pod": "v1", "Secret": "v1"}

func newCreateTokenCommand(o *cli.Options) *cobra.Command {
	t := &tokenOptions{}
	cmd := &cobra.Command{
		Use:   "token SERVICE_ACCOUNT_NAME",
		Short: "Request a service account token",
		Long: `Request a token of a service account (the serviceaccounts/token subresource,
as kubectl create token): a JWT signed by the apiserver, valid for
--duration (default: the server's, an hour), for --audience (default: the
apiserver), and, when bound to a Pod, Secret or Node, only while that
object exists. The token is printed; it is not stored anywhere.`,
		Example: `  tugctl create token builder -n ci
  tugctl create token builder --duration=10m --audience=https://vault.example
  tugctl create token default --bound-object-kind=Pod --bound-object-name=web-0`,
		Args: cli.ExactArgs(1, "SERVICE_ACCOUNT_NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t.name = args[0]
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			t.namespace = ns
			return runCreateToken(cmd.Context(), o, t)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&t.duration, "duration", 0, "requested lifetime of the token (whole seconds, at least 10m); the server may return a token with a shorter lifetime. 0: the server's default")
	f.StringArrayVar(&t.audiences, "audience", nil, "audience of the requested token (repeatable; default: the apiserver's)")
	f.StringVar(&t.boundKind, "bound-object-kind", "", "kind of the object the token is bound to: Node, Pod or Secret")
	f.StringVar(&t.boundName, "bound-object-name", "", "name of the object the token is bound to; the token stops working when it is deleted")
	f.StringVar(&t.boundUID, "bound-object-uid", "", "uid the bound object must have (default: the current one)")
	f.StringVarP(&t.output, "output", "o", "", "print the TokenRequest: yaml or json (default: the token only)")
	return cmd
}

// validate refuses what kubectl refuses, in its words.
func (t *tokenOptions) validate() error {
	if t.namespace == "" {
		return fmt.Errorf("--namespace is required")
	}
	if t.name == "" {
		return fmt.Errorf("service account name is required")
	}
	if t.duration < 0 {
		return fmt.Errorf("--duration must be greater than or equal to 0")
	}
	if t.duration%time.Second != 0 {
		return fmt.Errorf("--duration cannot be expressed in units less than seconds")
	}
	for _, a := range t.audiences {
		if a == "" {
			return fmt.Errorf("--audience must not be an empty string")
		}
	}
	if t.boundKind == "" {
		if t.boundName != "" {
			return fmt.Errorf("--bound-object-name can only be set if --bound-object-kind is provided")
		}
		if t.boundUID != "" {
			return fmt.Errorf("--bound-object-uid can only be set if --bound-object-kind is provided")
		}
	} else {
		if _, ok := boundObjectKinds[t.boundKind]; !ok {
			return fmt.Errorf("supported --bound-object-kind values are Node, Pod, Secret")
		}
		if t.boundName == "" {
			return fmt.Errorf("--bound-object-name is required if --bound-object-kind is provided")
		}
	}
	if t.output != "" && t.output != "yaml" && t.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", t.output)
	}
	return nil
}

// request is the TokenRequest the flags ask for.
func (t *tokenOptions) request() *v1.TokenRequest {
	tr := &v1.TokenRequest{Spec: &v1.TokenRequestSpec{Audiences: t.audiences}}
	if t.duration > 0 {
		tr.Spec.ExpirationSeconds = proto.Int64(int64(t.duration / time.Second))
	}
	if t.boundKind != "" {
		tr.Spec.BoundObjectRef = &v1.BoundObjectReference{Kind: t.boundKind, ApiVersion: boundObjectKinds[t.boundKind], Name: t.boundName, Uid: t.boundUID}
	}
	return tr
}

func runCreateToken(ctx context.Context, o *cli.Options, t *tokenOptions) error {
	if err := t.validate(); err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	out, err := c.CreateToken(ctx, t.namespace, t.name, t.request())
	if err != nil {
		return fmt.Errorf("failed to create token: %w", err)
	}
	if t.output == "" {
		_, err := fmt.Fprintln(o.Out, out.GetStatus().GetToken())
		return err
	}
	saKind, _ := kinds.Lookup("ServiceAccount")
	sub, _ := kinds.CreateSubresource(saKind, "token")
	m, err := manifest.MessageToMap(out, sub.APIVersion, sub.Kind)
	if err != nil {
		return err
	}
	format, err := manifest.ParseFormat(t.output)
	if err != nil {
		return err
	}
	b, err := manifest.MarshalMap(m, format)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(b)
	return err
}
