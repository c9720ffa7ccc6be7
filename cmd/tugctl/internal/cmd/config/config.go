package config

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/table"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/clientconfig"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// redacted replaces secrets in `config view`, as kubectl prints them.
const redacted = "REDACTED"

func newConfigCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and edit the config's clusters, users and contexts",
		Long: `Show and edit the config: --kubeconfig or --config, else $TUGBOAT_CONFIG,
else the $KUBECONFIG files (merged as kubectl merges them), else
~/.tugboat/config, else ~/.kube/config. A file is in tugctl's own form or
a standard kubeconfig; edits are written back in the form the file has,
to the file an entry came from (new entries to the first file), as
kubectl config does.

A file in tugctl's flat form (server, caFile, ... at the top level) is one
context named "default"; the first edit turns it into a cluster, a user
and a context named "default".

--server is the apiserver's gRPC address HOST:PORT, what tugctl talks to
(in a kubeconfig, the cluster's tugboat.io/grpc extension); a URL
(https://HOST:6444) is the Kubernetes API address kubectl talks to (a
kubeconfig cluster's server).`,
		Example: `  tugctl config set-cluster prod --server 10.0.0.10:6443 --ca-file prod/ca.crt
  tugctl config set-credentials admin --cert-file prod/admin.crt --key-file prod/admin.key
  tugctl config set-context prod --cluster prod --user admin --namespace web
  tugctl config use-context prod
  tugctl config set-context --current --namespace kube-system
  tugctl --kubeconfig ~/.kube/config config set-cluster tugboat --server 10.0.0.10:6443`,
	}
	view := &cobra.Command{
		Use:   "view",
		Short: "Print the config, secrets redacted (--raw shows them)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var f viewFlags
			f.raw, _ = cmd.Flags().GetBool("raw")
			f.minify, _ = cmd.Flags().GetBool("minify")
			f.flatten, _ = cmd.Flags().GetBool("flatten")
			return configView(o, f)
		},
	}
	view.Flags().Bool("raw", false, "show tokens and certificate data")
	view.Flags().Bool("minify", false, "only the current context, its cluster and its user")
	view.Flags().Bool("flatten", false, "certificate and key files embedded as data, so the output stands alone (implies --raw)")
	cmd.AddCommand(
		view,
		&cobra.Command{
			Use:   "current-context",
			Short: "Print the name of the current context",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				l, err := o.LoadConfig()
				if err != nil {
					return err
				}
				if l.Config.CurrentContext == "" {
					return fmt.Errorf("current-context is not set in %s", l.Sources.Describe())
				}
				fmt.Fprintln(o.Out, l.Config.CurrentContext)
				return nil
			},
		},
		&cobra.Command{
			Use:   "get-contexts [NAME...]",
			Short: "List the contexts, marking the current one",
			RunE:  func(_ *cobra.Command, args []string) error { return configGetContexts(o, args) },
		},
		newGetNamesCommand(o, "clusters", func(cfg *api.Config) []string { return slices.Sorted(maps.Keys(cfg.Clusters)) }),
		newGetNamesCommand(o, "users", func(cfg *api.Config) []string { return slices.Sorted(maps.Keys(cfg.AuthInfos)) }),
		&cobra.Command{
			Use:   "use-context NAME",
			Short: "Make NAME the current context",
			Args:  cli.ExactArgs(1, "NAME"),
			RunE: func(_ *cobra.Command, args []string) error {
				return editConfig(o, func(l *clientconfig.Loaded, cfg *api.Config) (string, error) {
					if _, ok := cfg.Contexts[args[0]]; !ok {
						return "", noContext(l, args[0])
					}
					cfg.CurrentContext = args[0]
					return fmt.Sprintf("Switched to context %q.", args[0]), nil
				})
			},
		},
		&cobra.Command{
			Use:   "rename-context OLD NEW",
			Short: "Rename a context (the current one stays current)",
			Args:  cli.ExactArgs(2, "OLD NEW"),
			RunE: func(_ *cobra.Command, args []string) error {
				old, name := args[0], args[1]
				return editConfig(o, func(l *clientconfig.Loaded, cfg *api.Config) (string, error) {
					c, ok := cfg.Contexts[old]
					if !ok {
						return "", fmt.Errorf("cannot rename the context %q, it's not in %s", old, l.Sources.Describe())
					}
					if _, taken := cfg.Contexts[name]; taken {
						return "", fmt.Errorf("cannot rename the context %q, the context %q already exists in %s", old, name, l.Sources.Describe())
					}
					delete(cfg.Contexts, old)
					cfg.Contexts[name] = c
					if cfg.CurrentContext == old {
						cfg.CurrentContext = name
					}
					return fmt.Sprintf("Context %q renamed to %q.", old, name), nil
				})
			},
		},
		newDeleteCommand(o, "context", func(cfg *api.Config, name string) bool {
			_, ok := cfg.Contexts[name]
			delete(cfg.Contexts, name)
			if ok && cfg.CurrentContext == name {
				cfg.CurrentContext = ""
				fmt.Fprintln(o.ErrOut, `warning: this removed your active context, use "tugctl config use-context" to select a different one`)
			}
			return ok
		}),
		newDeleteCommand(o, "cluster", func(cfg *api.Config, name string) bool {
			_, ok := cfg.Clusters[name]
			delete(cfg.Clusters, name)
			return ok
		}),
		newDeleteCommand(o, "user", func(cfg *api.Config, name string) bool {
			_, ok := cfg.AuthInfos[name]
			delete(cfg.AuthInfos, name)
			return ok
		}),
		newSetContextCommand(o),
		newSetClusterCommand(o),
		newSetCredentialsCommand(o),
	)
	return cmd
}

func noContext(l *clientconfig.Loaded, name string) error {
	return fmt.Errorf("context %q: no such context in %s (have: %s)", name, l.Sources.Describe(), table.OrNone(strings.Join(l.ContextNames(), ", ")))
}

// editConfig reads the config, applies edit to a copy, writes the copy
// back (see clientconfig.Loaded.Save) and prints edit's message. An error
// from edit writes nothing.
func editConfig(o *cli.Options, edit func(l *clientconfig.Loaded, cfg *api.Config) (string, error)) error {
	l, err := o.LoadConfig()
	if err != nil {
		return err
	}
	next := l.Config.DeepCopy()
	msg, err := edit(l, next)
	if err != nil {
		return err
	}
	if err := l.Save(next); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, msg)
	return nil
}

func newDeleteCommand(o *cli.Options, what string, del func(cfg *api.Config, name string) bool) *cobra.Command {
	return &cobra.Command{
		Use:   "delete-" + what + " NAME",
		Short: "Delete a " + what + " from the config",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			return editConfig(o, func(l *clientconfig.Loaded, cfg *api.Config) (string, error) {
				if !del(cfg, args[0]) {
					return "", fmt.Errorf("cannot delete %s %s, not in %s", what, args[0], l.Sources.Describe())
				}
				return fmt.Sprintf("deleted %s %s from %s", what, args[0], l.Sources.Describe()), nil
			})
		},
	}
}

// newGetNamesCommand is get-clusters or get-users: a NAME column.
func newGetNamesCommand(o *cli.Options, what string, names func(*api.Config) []string) *cobra.Command {
	return &cobra.Command{
		Use:   "get-" + what,
		Short: "List the " + what + " of the config",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			l, err := o.LoadConfig()
			if err != nil {
				return err
			}
			rows := [][]string{{"NAME"}}
			for _, n := range names(l.Config) {
				rows = append(rows, []string{n})
			}
			printers.WriteRows(o.Out, rows)
			return nil
		},
	}
}

// viewFlags are config view's flags.
type viewFlags struct {
	raw, minify, flatten bool
}

func configView(o *cli.Options, f viewFlags) error {
	l, err := o.LoadConfig()
	if err != nil {
		return err
	}
	cfg := l.Config.DeepCopy()
	if f.minify {
		if cfg.CurrentContext == "" {
			return fmt.Errorf("--minify: current-context is not set in %s", l.Sources.Describe())
		}
		if err := api.MinifyConfig(cfg); err != nil {
			return fmt.Errorf("--minify: %v", err)
		}
	}
	if f.flatten {
		if err := api.FlattenConfig(cfg); err != nil {
			return fmt.Errorf("--flatten: %v", err)
		}
	} else if !f.raw {
		api.ShortenConfig(cfg)
	}
	var out []byte
	if l.Own() {
		cf, err := clientconfig.OwnForm(l, cfg)
		if err != nil {
			return err
		}
		if out, err = yaml.Marshal(cf); err != nil {
			return err
		}
	} else if out, err = clientcmd.Write(*cfg); err != nil {
		return err
	}
	_, err = o.Out.Write(out)
	return err
}

func configGetContexts(o *cli.Options, names []string) error {
	l, err := o.LoadConfig()
	if err != nil {
		return err
	}
	rows := [][]string{{"CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"}}
	if len(names) == 0 {
		names = l.ContextNames()
	}
	for _, n := range names {
		c, ok := l.Config.Contexts[n]
		if !ok {
			return noContext(l, n)
		}
		cur := ""
		if n == l.Config.CurrentContext {
			cur = "*"
		}
		rows = append(rows, []string{cur, n, c.Cluster, c.AuthInfo, c.Namespace})
	}
	printers.WriteRows(o.Out, rows)
	return nil
}

func newSetContextCommand(o *cli.Options) *cobra.Command {
	var current bool
	var cluster, user, namespace string
	cmd := &cobra.Command{
		Use:   "set-context [NAME | --current] [--cluster C] [--user U] [--namespace NS]",
		Short: "Create a context or change its cluster, user or namespace",
		RunE: func(cmd *cobra.Command, args []string) error {
			return editConfig(o, func(l *clientconfig.Loaded, cfg *api.Config) (string, error) {
				var name string
				switch {
				case current && len(args) == 0:
					name = cfg.CurrentContext
					if name == "" {
						return "", fmt.Errorf("--current: current-context is not set in %s", l.Sources.Describe())
					}
				case !current && len(args) == 1:
					name = args[0]
				default:
					return "", fmt.Errorf("set-context: name one context, or use --current")
				}
				c, verb := cfg.Contexts[name], "modified"
				if c == nil {
					c, verb = api.NewContext(), "created"
					cfg.Contexts[name] = c
				}
				fl := cmd.Flags()
				if fl.Changed("cluster") {
					c.Cluster = cluster
				}
				if fl.Changed("user") {
					c.AuthInfo = user
				}
				if fl.Changed("namespace") {
					c.Namespace = namespace
				}
				return fmt.Sprintf("Context %q %s.", name, verb), nil
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&current, "current", false, "change the current context")
	fl.StringVar(&cluster, "cluster", "", "cluster of the context")
	fl.StringVar(&user, "user", "", "user of the context")
	fl.StringVarP(&namespace, "namespace", "n", "", "default namespace of the context")
	return cmd
}

func newSetClusterCommand(o *cli.Options) *cobra.Command {
	var server, caFile, serverName string
	var insecure bool
	cmd := &cobra.Command{
		Use:   "set-cluster NAME [--server HOST:PORT|URL] [--ca-file PATH] [--insecure-skip-tls-verify] [--tls-server-name NAME]",
		Short: "Create a cluster or change its server or CA",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editConfig(o, func(l *clientconfig.Loaded, cfg *api.Config) (string, error) {
				c := cfg.Clusters[args[0]]
				if c == nil {
					c = api.NewCluster()
					cfg.Clusters[args[0]] = c
				}
				fl := cmd.Flags()
				if fl.Changed("server") {
					if u, err := url.Parse(server); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
						c.Server = server // the Kubernetes API's URL, kubectl's
					} else {
						clientconfig.SetGRPCServer(c, server)
					}
				}
				if fl.Changed("ca-file") {
					c.CertificateAuthority, c.CertificateAuthorityData = absPath(caFile), nil
				}
				if fl.Changed("insecure-skip-tls-verify") {
					c.InsecureSkipTLSVerify = insecure
				}
				if fl.Changed("tls-server-name") {
					c.TLSServerName = serverName
				}
				return fmt.Sprintf("Cluster %q set.", args[0]), nil
			})
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "the apiserver's gRPC address host:port (tugctl's), or the URL of its Kubernetes API (kubectl's)")
	cmd.Flags().StringVar(&caFile, "ca-file", "", "CA bundle that signed the apiserver's certificate")
	cmd.Flags().BoolVar(&insecure, "insecure-skip-tls-verify", false, "do not check the apiserver's certificate (kubeconfig only)")
	cmd.Flags().StringVar(&serverName, "tls-server-name", "", "the name to check the apiserver's certificate for (kubeconfig only)")
	return cmd
}

func newSetCredentialsCommand(o *cli.Options) *cobra.Command {
	var certFile, keyFile, tokenFile, token string
	cmd := &cobra.Command{
		Use:   "set-credentials NAME [--cert-file PATH --key-file PATH] [--token-file PATH | --token TOKEN]",
		Short: "Create a user or change its certificate or token",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editConfig(o, func(_ *clientconfig.Loaded, cfg *api.Config) (string, error) {
				u := cfg.AuthInfos[args[0]]
				if u == nil {
					u = api.NewAuthInfo()
					cfg.AuthInfos[args[0]] = u
				}
				fl := cmd.Flags()
				if fl.Changed("cert-file") {
					u.ClientCertificate, u.ClientCertificateData = absPath(certFile), nil
				}
				if fl.Changed("key-file") {
					u.ClientKey, u.ClientKeyData = absPath(keyFile), nil
				}
				if fl.Changed("token-file") {
					u.TokenFile = absPath(tokenFile)
				}
				if fl.Changed("token") {
					u.Token = token
				}
				if u.Token != "" && u.TokenFile != "" {
					return "", fmt.Errorf("--token/--token-file: user %q would have both; set the other to \"\"", args[0])
				}
				return fmt.Sprintf("User %q set.", args[0]), nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&certFile, "cert-file", "", "client certificate")
	fl.StringVar(&keyFile, "key-file", "", "private key of --cert-file")
	fl.StringVar(&tokenFile, "token-file", "", "file holding a bearer token")
	fl.StringVar(&token, "token", "", "bearer token, stored in the config file")
	return cmd
}

// absPath is a path typed on the command line (relative to the working
// directory) made absolute; it is stored relative to the config file's
// directory when inside it.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
