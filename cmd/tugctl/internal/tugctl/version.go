package tugctl

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

func newVersionCommand(o *cli.Options) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tugctl version and the apiserver it talks to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Out, "Client Version: %s (%s, %s/%s)\n", versionString(o.Version), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if clientOnly {
				return nil
			}
			s, err := o.Settings()
			if err != nil {
				return err
			}
			api, err := o.API(mustKind("Namespace"))
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			if _, err := api.Get(ctx, "", "default"); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Server: %s (from %s), reachable\n", s.Server, s.ServerFrom)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the client version only; do not contact the server")
	return cmd
}

// versionString is the version given at build time, else the module's
// version or VCS revision from the build info.
func versionString(v string) string {
	if v != "" && v != "dev" {
		return v
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}

func mustKind(name string) *kinds.Kind {
	k, err := kinds.Lookup(name)
	if err != nil {
		panic(err) // a programming error: name is a registered kind
	}
	return k
}

func newAPIResourcesCommand(o *cli.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "api-resources",
		Short: "List the kinds the API serves, with their short names",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows := [][]string{{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}}
			for _, k := range kinds.All() {
				rows = append(rows, []string{k.Plural, strings.Join(k.Short, ","), k.APIVersion, fmt.Sprint(k.Namespaced), k.Name})
			}
			printers.WriteRows(o.Out, rows)
			return nil
		},
	}
}

func newAPIVersionsCommand(o *cli.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "api-versions",
		Short: "List the API versions the kinds are served at, as group/version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			seen := map[string]bool{}
			var out []string
			for _, k := range kinds.All() {
				if !seen[k.APIVersion] {
					seen[k.APIVersion] = true
					out = append(out, k.APIVersion)
				}
			}
			sort.Strings(out)
			for _, v := range out {
				fmt.Fprintln(o.Out, v)
			}
			return nil
		},
	}
}
