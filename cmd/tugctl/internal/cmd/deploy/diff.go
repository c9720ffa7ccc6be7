package deploy

import (
	"context"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type diffFlags struct {
	files cli.FileFlags
}

func newDiffCommand(o *cli.Options) *cobra.Command {
	f := &diffFlags{}
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|- | -k DIR",
		Short: "Show what apply would change, as a unified diff of live and applied objects",
		Long: `Show, for each object of the manifests, the unified diff between the
object as it is (LIVE) and as it would be after tugctl apply (MERGED): the
apply's three-way patch sent as a server-side dry run, so the apiserver's
defaults, validation and admission are in it and nothing is stored. An
object that does not exist yet is all added lines. Secret values are
masked (*** , or "*** (before)" and "*** (after)" where they differ).

Exit status: 0 when nothing would change, 1 when something would, 2 on an
error (as kubectl diff: greater than 1).`,
		Example: `  tugctl diff -f web.yaml
  tugctl diff -k overlays/prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runDiff(cmd.Context(), o, f)
			if err == nil || isExitCode(err) {
				return err
			}
			fmt.Fprintln(o.ErrOut, "error: "+o.ErrorMessage(err))
			return cli.ExitCode(2)
		},
	}
	f.files.Register(cmd, "to compare with the cluster")
	f.files.RegisterKustomize(cmd, "to compare with the cluster")
	return cmd
}

// lines splits a text into lines that keep their "\n" (none for "", as
// diff -N reads a missing file).
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func isExitCode(err error) bool {
	_, ok := err.(cli.ExitCode)
	return ok
}

func runDiff(ctx context.Context, o *cli.Options, f *diffFlags) error {
	objs, err := o.ReadInput(f.files)
	if err != nil {
		return err
	}
	for _, mo := range objs {
		if mo.Object.GetMetadata().GetName() == "" {
			return fmt.Errorf("%s (%s): metadata.name: required", mo.Source, mo.Kind.Name)
		}
		if err := o.PlaceObject(mo); err != nil {
			return err
		}
	}
	differ := false
	for _, mo := range objs {
		a, err := applyOne(ctx, o, mo, applyOptions{dryRun: cli.DryRunServer, overwrite: true})
		if err != nil {
			return fmt.Errorf("%s (%s %s): %w", mo.Source, mo.Kind.Name, mo.Object.GetMetadata().GetName(), err)
		}
		live, merged, err := diffTexts(a.live, a.out)
		if err != nil {
			return err
		}
		if live == merged {
			continue
		}
		differ = true
		m := mo.Object.GetMetadata()
		name := strings.ReplaceAll(mo.Kind.APIVersion, "/", ".") + "." + mo.Kind.Name + "."
		if m.GetNamespace() != "" {
			name += m.GetNamespace() + "."
		}
		name += m.GetName()
		ud, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: lines(live), B: lines(merged),
			FromFile: "LIVE/" + name, ToFile: "MERGED/" + name, Context: 3,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "diff -u -N LIVE/%s MERGED/%s\n%s", name, name, ud)
	}
	if differ {
		return cli.ExitCode(1)
	}
	return nil
}

// diffTexts is the YAML of the live and the merged object ("" for none),
// with a Secret's values masked.
func diffTexts(live, merged v1.Object) (string, string, error) {
	var maps [2]map[string]any
	for i, obj := range []v1.Object{live, merged} {
		if obj == nil {
			continue
		}
		m, err := manifest.ToMap(obj)
		if err != nil {
			return "", "", err
		}
		maps[i] = m
	}
	if _, ok := live.(*v1.Secret); ok {
		maskSecrets(maps[0], maps[1])
	} else if _, ok := merged.(*v1.Secret); ok && live == nil {
		maskSecrets(nil, maps[1])
	}
	var out [2]string
	for i, m := range maps {
		if m == nil {
			continue
		}
		y, err := manifest.MarshalMap(m, manifest.YAML)
		if err != nil {
			return "", "", err
		}
		out[i] = string(y)
	}
	return out[0], out[1], nil
}

// maskSecrets replaces the values of a Secret's data by "***", or by
// "*** (before)" and "*** (after)" where live and merged differ, as
// kubectl diff does.
func maskSecrets(live, merged map[string]any) {
	data := func(m map[string]any) map[string]any {
		d, _ := m["data"].(map[string]any)
		return d
	}
	l, m := data(live), data(merged)
	for k, v := range l {
		if mv, ok := m[k]; ok && mv == v {
			l[k], m[k] = "***", "***"
			continue
		}
		l[k] = "*** (before)"
		if _, ok := m[k]; ok {
			m[k] = "*** (after)"
		}
	}
	for k := range m {
		if _, ok := l[k]; !ok {
			m[k] = "*** (after)"
		}
	}
}
