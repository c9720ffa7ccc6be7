package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tugboat/tugboat/api/table"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/clientconfig"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
	"sigs.k8s.io/yaml"
)

// redacted replaces secrets in `config view`, as kubectl prints them.
const redacted = "REDACTED"

func newConfigCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and edit the config file's clusters, users and contexts",
		Long: `Show and edit the config file (--config, $TUGBOAT_CONFIG or ~/.tugboat/config).

A file in the flat form (server, caFile, ... at the top level) is one context
named "default"; the first edit turns it into a cluster, a user and a context
named "default".`,
		Example: `  tugctl config set-cluster prod --server 10.0.0.10:6443 --ca-file prod/ca.crt
  tugctl config set-credentials admin --cert-file prod/admin.crt --key-file prod/admin.key
  tugctl config set-context prod --cluster prod --user admin --namespace web
  tugctl config use-context prod
  tugctl config set-context --current --namespace kube-system`,
	}
	view := &cobra.Command{
		Use:   "view",
		Short: "Print the config file, tokens redacted (--raw shows them)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, _ := cmd.Flags().GetBool("raw")
			return configView(o, raw)
		},
	}
	view.Flags().Bool("raw", false, "show tokens")
	cmd.AddCommand(
		view,
		&cobra.Command{
			Use:   "current-context",
			Short: "Print the name of the current context",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				path, cf, err := loadConfig(o, false)
				if err != nil {
					return err
				}
				if cf.Current() == "" {
					return fmt.Errorf("current-context is not set in %s", path)
				}
				fmt.Fprintln(o.Out, cf.Current())
				return nil
			},
		},
		&cobra.Command{
			Use:   "get-contexts",
			Short: "List the contexts, marking the current one",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return configGetContexts(o) },
		},
		&cobra.Command{
			Use:   "use-context NAME",
			Short: "Make NAME the current context",
			Args:  cli.ExactArgs(1, "NAME"),
			RunE: func(_ *cobra.Command, args []string) error {
				return editConfig(o, func(path string, cf *clientconfig.ConfigFile) (string, error) {
					if cf.FindContext(args[0]) == nil {
						return "", fmt.Errorf("context %q: no such context in %s (have: %s)", args[0], path, table.OrNone(strings.Join(cf.ContextNames(), ", ")))
					}
					cf.CurrentContext = args[0]
					return fmt.Sprintf("Switched to context %q.", args[0]), nil
				})
			},
		},
		newSetContextCommand(o),
		newSetClusterCommand(o),
		newSetCredentialsCommand(o),
	)
	return cmd
}

// loadConfig reads the config file; required says a missing file is an
// error even at the default path.
func loadConfig(o *cli.Options, required bool) (string, *clientconfig.ConfigFile, error) {
	path, mustExist, err := o.ConfigPath()
	if err != nil {
		return "", nil, err
	}
	cf, err := clientconfig.LoadConfigFile(path, required || mustExist)
	return path, cf, err
}

// editConfig reads the config file (a missing one is empty), turns the
// flat form into contexts, applies edit, writes the file back and prints
// edit's message.
func editConfig(o *cli.Options, edit func(path string, cf *clientconfig.ConfigFile) (string, error)) error {
	path, cf, err := loadConfig(o, false)
	if err != nil {
		return err
	}
	cf.ToContextForm()
	msg, err := edit(path, cf)
	if err != nil {
		return err
	}
	if err := clientconfig.SaveConfigFile(path, cf); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	fmt.Fprintln(o.Out, msg)
	return nil
}

func configView(o *cli.Options, raw bool) error {
	_, cf, err := loadConfig(o, false)
	if err != nil {
		return err
	}
	view := *cf
	view.Users = append([]clientconfig.UserEntry(nil), cf.Users...)
	for i := range view.Users {
		if view.Users[i].Token != "" && !raw {
			view.Users[i].Token = redacted
		}
	}
	out, err := yaml.Marshal(&view)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(out)
	return err
}

func configGetContexts(o *cli.Options) error {
	_, cf, err := loadConfig(o, false)
	if err != nil {
		return err
	}
	rows := [][]string{{"CURRENT", "NAME", "CLUSTER", "USER", "NAMESPACE"}}
	list := cf.Contexts
	if cf.Flat() {
		list = []clientconfig.ContextEntry{{Name: clientconfig.ImplicitContext, Namespace: cf.Namespace}}
	}
	for _, c := range list {
		cur := ""
		if c.Name == cf.Current() {
			cur = "*"
		}
		rows = append(rows, []string{cur, c.Name, c.Cluster, c.User, c.Namespace})
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
			return editConfig(o, func(path string, cf *clientconfig.ConfigFile) (string, error) {
				var name string
				switch {
				case current && len(args) == 0:
					name = cf.CurrentContext
					if name == "" {
						return "", fmt.Errorf("--current: current-context is not set in %s", path)
					}
				case !current && len(args) == 1:
					name = args[0]
				default:
					return "", fmt.Errorf("set-context: name one context, or use --current")
				}
				c, verb := cf.FindContext(name), "modified"
				if c == nil {
					cf.Contexts = append(cf.Contexts, clientconfig.ContextEntry{Name: name})
					c, verb = &cf.Contexts[len(cf.Contexts)-1], "created"
				}
				fl := cmd.Flags()
				if fl.Changed("cluster") {
					c.Cluster = cluster
				}
				if fl.Changed("user") {
					c.User = user
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
	var server, caFile string
	cmd := &cobra.Command{
		Use:   "set-cluster NAME [--server HOST:PORT] [--ca-file PATH]",
		Short: "Create a cluster or change its server or CA",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editConfig(o, func(path string, cf *clientconfig.ConfigFile) (string, error) {
				c := cf.FindCluster(args[0])
				if c == nil {
					cf.Clusters = append(cf.Clusters, clientconfig.ClusterEntry{Name: args[0]})
					c = &cf.Clusters[len(cf.Clusters)-1]
				}
				if cmd.Flags().Changed("server") {
					c.Server = server
				}
				if cmd.Flags().Changed("ca-file") {
					c.CAFile = storedPath(path, caFile)
				}
				return fmt.Sprintf("Cluster %q set.", args[0]), nil
			})
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "apiserver address host:port")
	cmd.Flags().StringVar(&caFile, "ca-file", "", "CA bundle that signed the apiserver's certificate")
	return cmd
}

func newSetCredentialsCommand(o *cli.Options) *cobra.Command {
	var certFile, keyFile, tokenFile, token string
	cmd := &cobra.Command{
		Use:   "set-credentials NAME [--cert-file PATH --key-file PATH] [--token-file PATH | --token TOKEN]",
		Short: "Create a user or change its certificate or token",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editConfig(o, func(path string, cf *clientconfig.ConfigFile) (string, error) {
				u := cf.FindUser(args[0])
				if u == nil {
					cf.Users = append(cf.Users, clientconfig.UserEntry{Name: args[0]})
					u = &cf.Users[len(cf.Users)-1]
				}
				fl := cmd.Flags()
				for _, f := range []struct {
					flag     string
					dst, val *string
				}{{"cert-file", &u.CertFile, &certFile}, {"key-file", &u.KeyFile, &keyFile}, {"token-file", &u.TokenFile, &tokenFile}} {
					if fl.Changed(f.flag) {
						*f.dst = storedPath(path, *f.val)
					}
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

// storedPath is how a path typed on the command line (relative to the
// working directory) is written into the config file at configPath:
// relative to the file's directory when inside it, else absolute.
func storedPath(configPath, p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	dir, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return rel
	}
	return abs
}
