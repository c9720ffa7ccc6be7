package basic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/jsonpath"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type waitFlags struct {
	forSpec  string
	timeout  time.Duration
	selector string
	all      bool
}

func newWaitCommand(o *cli.Options) *cobra.Command {
	f := &waitFlags{}
	cmd := &cobra.Command{
		Use:   "wait KIND NAME... | KIND/NAME... | KIND -l SELECTOR | KIND --all --for=CONDITION [--timeout=30s]",
		Short: "Wait until objects meet a condition, or are deleted",
		Long: `Wait until each object meets the condition:

  --for=condition=TYPE[=VALUE]   a status condition of that type (any case) has
                                 status VALUE (default True): Ready, Available,
                                 Progressing, Complete, ...
  --for=delete                   the object is gone (one already gone counts)
  --for=jsonpath={PATH}[=VALUE]  the field has that value (or, without a
                                 value, exists)

Prints "pod/web condition met" (or "deleted") per object; when --timeout
passes first, the error names the objects still waiting and what they have.`,
		Example: `  tugctl wait pod/web --for=condition=Ready --timeout=60s
  tugctl wait deploy -l app=web --for=condition=Available
  tugctl wait pod/web --for=delete
  tugctl wait pod/web --for=jsonpath='{.status.phase}'=Running`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWait(cmd.Context(), o, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.forSpec, "for", "", "condition=TYPE[=VALUE], delete, or jsonpath={PATH}[=VALUE] (required)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long (0: check once)")
	fl.StringVarP(&f.selector, "selector", "l", "", "wait for the objects with these labels")
	fl.BoolVar(&f.all, "all", false, "wait for every object of the kind")
	return cmd
}

// waitCond is a parsed --for: met says whether obj (nil: gone) meets it,
// and if not, what it has instead.
type waitCond struct {
	deleted bool
	met     func(obj any) (bool, string)
	word    string // "condition met" or "deleted"
}

func parseFor(s string) (*waitCond, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("--for: required: condition=TYPE[=VALUE], delete or jsonpath={PATH}[=VALUE]")
	case s == "delete":
		return &waitCond{deleted: true, word: "deleted"}, nil
	case strings.HasPrefix(s, "condition="):
		typ, want, hasWant := strings.Cut(strings.TrimPrefix(s, "condition="), "=")
		if typ == "" {
			return nil, fmt.Errorf("--for %s: the condition type is missing", s)
		}
		if !hasWant {
			want = "True"
		}
		return &waitCond{word: "condition met", met: func(obj any) (bool, string) {
			m, _ := obj.(map[string]any)
			st, _ := m["status"].(map[string]any)
			conds, _ := st["conditions"].([]any)
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if t, _ := cm["type"].(string); strings.EqualFold(t, typ) {
					got, _ := cm["status"].(string)
					return strings.EqualFold(got, want), fmt.Sprintf("condition %s is %s", t, got)
				}
			}
			return false, fmt.Sprintf("no condition %s", typ)
		}}, nil
	case strings.HasPrefix(s, "jsonpath="):
		expr := strings.TrimPrefix(s, "jsonpath=")
		path, want, hasWant := expr, "", false
		if i := strings.LastIndex(expr, "}="); i >= 0 {
			path, want, hasWant = expr[:i+1], expr[i+2:], true
		}
		rel, err := printers.RelaxedJSONPath(path)
		if err != nil {
			return nil, fmt.Errorf("--for %s: %v", s, err)
		}
		jp := jsonpath.New("for").AllowMissingKeys(true)
		if err := jp.Parse(rel); err != nil {
			return nil, fmt.Errorf("--for %s: error parsing jsonpath %s, %v", s, rel, err)
		}
		return &waitCond{word: "condition met", met: func(obj any) (bool, string) {
			res, err := jp.FindResults(obj)
			if err != nil || len(res) == 0 || len(res[0]) == 0 {
				return false, path + " is not set"
			}
			got := fmt.Sprint(res[0][0].Interface())
			if !hasWant {
				return true, ""
			}
			return got == want, fmt.Sprintf("%s is %q", path, got)
		}}, nil
	}
	return nil, fmt.Errorf("--for %q: want condition=TYPE[=VALUE], delete or jsonpath={PATH}[=VALUE]", s)
}

func runWait(ctx context.Context, o *cli.Options, args []string, f *waitFlags) error {
	cond, err := parseFor(f.forSpec)
	if err != nil {
		return err
	}
	if f.timeout < 0 {
		return fmt.Errorf("--timeout %s: must not be negative", f.timeout)
	}
	ra, err := cli.ParseResourceArgs(args)
	if err != nil {
		return err
	}
	var refs []cli.Ref
	switch {
	case ra.Named() && (f.selector != "" || f.all):
		return fmt.Errorf("name objects or use -l/--all, not both")
	case ra.Named():
		refs = ra.Refs
	case f.selector == "" && !f.all:
		return fmt.Errorf("name the objects: KIND NAME, KIND/NAME, KIND -l SELECTOR or KIND --all")
	default:
		groups, err := o.List(ctx, ra, cli.Selectors{Label: f.selector})
		if err != nil {
			return err
		}
		for _, g := range groups {
			for _, obj := range g.Objs {
				refs = append(refs, cli.Ref{Kind: g.Kind, Name: obj.GetMetadata().GetName()})
			}
		}
		if len(refs) == 0 {
			return fmt.Errorf("no matching resources found")
		}
	}
	pending := map[int]string{} // index in refs -> what it has
	for i := range refs {
		pending[i] = "not checked yet"
	}
	var fatal error // ends the wait at once: a named object that does not exist
	check := func(ctx context.Context) error {
		for i, r := range refs {
			if _, ok := pending[i]; !ok {
				continue
			}
			api, err := o.API(r.Kind)
			if err != nil {
				return err
			}
			ns, err := o.ObjectNamespace(r.Kind)
			if err != nil {
				return err
			}
			obj, err := api.Get(ctx, ns, r.Name)
			switch {
			case apierrors.IsNotFound(err) && cond.deleted:
				delete(pending, i)
				fmt.Fprintf(o.Out, "%s/%s %s\n", printers.ResourceName(r.Kind), r.Name, cond.word)
				continue
			case apierrors.IsNotFound(err):
				fatal = fmt.Errorf("%s %q not found", printers.QualifiedPlural(r.Kind), r.Name)
				return nil
			case err != nil:
				pending[i] = err.Error()
				continue
			case cond.deleted:
				pending[i] = "still exists"
				if obj.GetMetadata().GetDeletionTimestamp() != nil {
					pending[i] = "being deleted"
				}
				continue
			}
			v, err := printers.ObjectValue(obj)
			if err != nil {
				return err
			}
			ok, has := cond.met(v)
			if ok {
				delete(pending, i)
				fmt.Fprintf(o.Out, "%s/%s %s\n", printers.ResourceName(r.Kind), r.Name, cond.word)
				continue
			}
			pending[i] = has
		}
		if len(pending) == 0 {
			return nil
		}
		return errors.New("waiting")
	}
	_ = wait.Until(ctx, max(f.timeout, time.Millisecond), check)
	if fatal != nil {
		return fatal
	}
	if len(pending) == 0 {
		return nil
	}
	var parts []string
	for i, r := range refs {
		if has, ok := pending[i]; ok {
			parts = append(parts, fmt.Sprintf("%s/%s (%s)", printers.QualifiedPlural(r.Kind), r.Name, has))
		}
	}
	return fmt.Errorf("timed out waiting for the condition on %s", strings.Join(parts, ", "))
}
