// Package tugctl is the Tugboat command line, shaped like kubectl: apply,
// create, get, describe, delete, scale, rollout and version over the
// generic object API; logs, exec, image and top over the NodeAPI the
// apiserver relays to kubelets; trace (a pod's journey or a Service's path
// through the components, naming the layer where it stops) over both;
// token and auth over the Auth service; config for the config file's
// contexts.
//
// Every command is a cobra command built by NewRootCommand around one
// *Options, which holds the I/O streams and the global flags and dials the
// apiserver lazily (so --help and bad flags never need a server). Commands
// write results to Out and return errors; Run prints "error: ..." and
// turns any error into exit status 1, so scripts can rely on the status.
// Kind names resolve through api/kinds (po, deploy, rs, svc, ...), objects
// print through the per-kind tables in tables*.go and the Kubernetes-shaped
// encoder of api/manifest.
package tugctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Streams are the command's standard input and outputs.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Options are the global flags and what every command shares.
type Options struct {
	Streams
	// Version is printed by `tugctl version`.
	Version string
	// Getenv reads the environment (os.Getenv; tests pass their own).
	Getenv func(string) string

	flags  globalFlags
	client *client.Client
	// settings is where the server address and the namespace came from,
	// resolved once.
	settings *Settings
}

// globalFlags are the persistent flags of the root command.
type globalFlags struct {
	server        string
	configPath    string
	context       string
	namespace     string
	allNamespaces bool
	caFile        string
	certFile      string
	keyFile       string
	tokenFile     string
}

// Run executes tugctl with args and returns the process exit status.
func Run(ctx context.Context, s Streams, args []string, version string) int {
	o := &Options{Streams: s, Version: version, Getenv: os.Getenv}
	return o.Execute(ctx, args)
}

// Execute runs one command line with o and returns the exit status: 0, or
// 1 after printing the error.
func (o *Options) Execute(ctx context.Context, args []string) int {
	defer o.Close()
	root := NewRootCommand(o)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, errReported) {
			return 1
		}
		var ec exitCode
		if errors.As(err, &ec) {
			return int(ec)
		}
		fmt.Fprintln(o.ErrOut, "error: "+o.errorMessage(err))
		return 1
	}
	return 0
}

// errorMessage is how an error reads on the terminal. An unreachable
// server gets a hint about where the address came from.
func (o *Options) errorMessage(err error) string {
	msg := err.Error()
	if errors.Is(err, apierrors.ErrUnavailable) && o.settings != nil {
		msg += fmt.Sprintf(" (is the apiserver running at %s? set by %s)", o.settings.Server, o.settings.ServerFrom)
	}
	return msg
}

// Close releases the connection, if one was made.
func (o *Options) Close() {
	if o.client != nil {
		o.client.Close()
		o.client = nil
	}
}

// NewRootCommand builds the tugctl command tree around o.
func NewRootCommand(o *Options) *cobra.Command {
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
	f := root.PersistentFlags()
	f.StringVar(&o.flags.server, "server", "", "apiserver address host:port (default: $TUGBOAT_SERVER, the config file, 127.0.0.1:6443)")
	f.StringVar(&o.flags.configPath, "config", "", "config file (default: $TUGBOAT_CONFIG or ~/.tugboat/config)")
	f.StringVar(&o.flags.context, "context", "", "context of the config file to use (default: its current-context)")
	f.StringVarP(&o.flags.namespace, "namespace", "n", "", "namespace of the request (default: the context's, else \"default\")")
	f.BoolVarP(&o.flags.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVar(&o.flags.caFile, "ca-file", "", "CA bundle that signed the apiserver's certificate; enables TLS")
	f.StringVar(&o.flags.certFile, "cert-file", "", "client certificate presented to the apiserver")
	f.StringVar(&o.flags.keyFile, "key-file", "", "private key of --cert-file")
	f.StringVar(&o.flags.tokenFile, "token-file", "", "file holding a bearer token")
	root.AddCommand(
		newApplyCommand(o),
		newCreateCommand(o),
		newGetCommand(o),
		newDescribeCommand(o),
		newTraceCommand(o),
		newTopCommand(o),
		newDeleteCommand(o),
		newScaleCommand(o),
		newRolloutCommand(o),
		newVersionCommand(o),
		newAPIResourcesCommand(o),
		newLogsCommand(o),
		newExecCommand(o),
		newImageCommand(o),
		newTokenCommand(o),
		newAuthCommand(o),
		newConfigCommand(o),
	)
	return root
}

// exitCode is an error that only sets the exit status (exec passes the
// remote command's on; auth can-i exits 1 for "no"): nothing is printed.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Settings returns the resolved connection settings (flags, environment,
// config file), reading the config file once.
func (o *Options) Settings() (*Settings, error) {
	if o.settings != nil {
		return o.settings, nil
	}
	s, err := resolveSettings(o.flags, o.Getenv)
	if err != nil {
		return nil, err
	}
	o.settings = s
	return s, nil
}

// Client dials the apiserver (once).
func (o *Options) Client() (*client.Client, error) {
	if o.client != nil {
		return o.client, nil
	}
	s, err := o.Settings()
	if err != nil {
		return nil, err
	}
	cfg, err := s.ClientConfig("tugctl")
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	o.client = c
	return c, nil
}

// Namespace is the namespace of the request: -n, else the config file's,
// else "default".
func (o *Options) Namespace() (string, error) {
	s, err := o.Settings()
	if err != nil {
		return "", err
	}
	return s.Namespace, nil
}

// listNamespace is the namespace to list kind k in: "" for -A or a
// cluster-scoped kind.
func (o *Options) listNamespace(k *kinds.Kind) (string, error) {
	if !k.Namespaced || o.flags.allNamespaces {
		return "", nil
	}
	return o.Namespace()
}

// objectNamespace is the namespace of a named object of kind k.
func (o *Options) objectNamespace(k *kinds.Kind) (string, error) {
	if !k.Namespaced {
		return "", nil
	}
	return o.Namespace()
}

// api is the untyped API of kind k.
func (o *Options) api(k *kinds.Kind) (*client.Typed[v1.Object], error) {
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	return client.ForKind(c, k), nil
}
