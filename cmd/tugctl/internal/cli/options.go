// Package cli is what every tugctl command shares: the Options (the I/O
// streams, the global flags, the apiserver connection dialled lazily, the
// namespace of the request), the ways a command line names objects
// (KIND NAME..., KIND/NAME..., KIND,KIND, all) and reads them from the
// API, the -f manifests, and the exit status conventions.
//
// A command is "flags -> options struct -> a function": its cobra.Command
// fills a flags struct and calls a function of that struct and the
// Options, which writes results to Out and returns an error. An error
// becomes "error: ..." on ErrOut and exit status 1 (see Execute in
// cmd/tugctl/internal/tugctl); ErrReported and ExitCode are the two ways to
// set the status without that line.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/clientconfig"
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
	// Flags are the global flags, as parsed.
	Flags GlobalFlags

	client *client.Client
	// settings is where the server address and the namespace came from,
	// resolved once.
	settings *clientconfig.Settings
}

// GlobalFlags are the persistent flags of the root command.
type GlobalFlags struct {
	clientconfig.Flags
	AllNamespaces bool // -A
}

// RegisterFlags adds the global flags to root's persistent flags.
func (o *Options) RegisterFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&o.Flags.Server, "server", "", "apiserver address host:port, or several comma-separated (a:6443,b:6443) (default: $TUGBOAT_SERVER, the config file, 127.0.0.1:6443)")
	f.StringVar(&o.Flags.ConfigPath, "config", "", "config file, tugctl's form or a kubeconfig (default: $TUGBOAT_CONFIG, $KUBECONFIG, ~/.tugboat/config, ~/.kube/config)")
	f.StringVar(&o.Flags.Kubeconfig, "kubeconfig", "", "kubeconfig file (as --config; kubectl's flag)")
	f.StringVar(&o.Flags.Context, "context", "", "context of the config file to use (default: its current-context)")
	f.StringVarP(&o.Flags.Namespace, "namespace", "n", "", "namespace of the request (default: the context's, else \"default\")")
	f.BoolVarP(&o.Flags.AllNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVar(&o.Flags.CAFile, "ca-file", "", "CA bundle that signed the apiserver's certificate; enables TLS")
	f.StringVar(&o.Flags.CertFile, "cert-file", "", "client certificate presented to the apiserver")
	f.StringVar(&o.Flags.KeyFile, "key-file", "", "private key of --cert-file")
	f.StringVar(&o.Flags.TokenFile, "token-file", "", "file holding a bearer token")
	f.BoolVar(&o.Flags.InsecurePlaintextToken, "insecure-plaintext-token", false, "send the bearer token although there is no CA and so no TLS: only to a loopback apiserver (a token is never sent in the clear otherwise)")
}

// getenv is Getenv, else os.Getenv.
func (o *Options) getenv(k string) string {
	if o.Getenv == nil {
		return os.Getenv(k)
	}
	return o.Getenv(k)
}

// ErrorMessage is how an error reads on the terminal. An unreachable
// server gets a hint about where the address came from.
func (o *Options) ErrorMessage(err error) string {
	msg := err.Error()
	if errors.Is(err, apierrors.ErrUnavailable) && o.settings != nil && !strings.Contains(msg, "speak TLS") && !strings.Contains(msg, "speaks TLS") {
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

// Settings returns the resolved connection settings (flags, environment,
// config file), reading the config file once.
func (o *Options) Settings() (*clientconfig.Settings, error) {
	if o.settings != nil {
		return o.settings, nil
	}
	s, err := clientconfig.Resolve(o.Flags.Flags, o.getenv)
	if err != nil {
		return nil, err
	}
	o.settings = s
	return s, nil
}

// LoadConfig reads the config files (for tugctl config).
func (o *Options) LoadConfig() (*clientconfig.Loaded, error) {
	src, err := clientconfig.FindSources(o.Flags.Flags, o.getenv)
	if err != nil {
		return nil, err
	}
	return clientconfig.Load(src)
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
	// The apiserver's warnings (Pod Security) go to stderr, as kubectl's.
	cfg.Warnings = func(w string) { fmt.Fprintf(o.ErrOut, "Warning: %s\n", w) }
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

// ListNamespace is the namespace to list kind k in: "" for -A or a
// cluster-scoped kind.
func (o *Options) ListNamespace(k *kinds.Kind) (string, error) {
	if !k.Namespaced || o.Flags.AllNamespaces {
		return "", nil
	}
	return o.Namespace()
}

// ObjectNamespace is the namespace of a named object of kind k.
func (o *Options) ObjectNamespace(k *kinds.Kind) (string, error) {
	if !k.Namespaced {
		return "", nil
	}
	return o.Namespace()
}

// API is the untyped API of kind k.
func (o *Options) API(k *kinds.Kind) (*client.Typed[v1.Object], error) {
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	return client.ForKind(c, k), nil
}
