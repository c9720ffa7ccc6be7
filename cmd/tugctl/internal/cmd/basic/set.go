package basic

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// set image|env|resources change the containers of the objects that run
// pods (a pod, or a workload's pod template: cli.PodSpecOf) through
// cli.Change, so only what changed is sent, as a strategic merge patch
// (containers merge by name). An object whose containers already are as
// asked prints nothing, as kubectl does.

func newSetCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set image|env|resources",
		Short: "Set the image, environment or resources of the containers of pods and workloads",
	}
	cmd.AddCommand(newSetImageCommand(o), newSetEnvCommand(o), newSetResourcesCommand(o))
	return cmd
}

// setFlags are what the set commands share.
type setFlags struct {
	sel    cli.SelectFlags
	dryRun cli.DryRun
	output string
}

func (f *setFlags) register(cmd *cobra.Command) {
	f.sel.Register(cmd)
	cli.RegisterDryRun(cmd, &f.dryRun)
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "print the changed objects: yaml, json, name or a template")
}

// splitAssignments separates the objects from the NAME=VALUE (and NAME-)
// arguments that follow them.
func splitAssignments(args []string) (objs, assigns []string) {
	i := slices.IndexFunc(args, func(a string) bool { return strings.Contains(a, "=") || strings.HasSuffix(a, "-") })
	if i < 0 {
		return args, nil
	}
	return args[:i], args[i:]
}

// runSet changes the pod spec of each selected object with fn and prints
// "kind/name <verb>" for each one that changed.
func runSet(ctx context.Context, o *cli.Options, objArgs []string, f *setFlags, verb string, fn func(*v1.PodSpec) error) error {
	out, err := cli.DocumentOutput(f.output)
	if err != nil {
		return err
	}
	if len(objArgs) == 0 && len(f.sel.Files.Files) == 0 {
		return fmt.Errorf("name the objects: KIND NAME, KIND/NAME, KIND -l SELECTOR, KIND --all or -f FILE")
	}
	targets, missing, err := o.Select(ctx, objArgs, f.sel)
	if err != nil {
		return err
	}
	// Every object is changed locally first: a container that is not
	// there stops the command before anything is sent.
	nexts := make([]v1.Object, len(targets))
	for i, t := range targets {
		next := proto.Clone(t.Obj).(v1.Object)
		spec, ok := cli.PodSpecOf(next)
		if !ok {
			return fmt.Errorf("%s: a %s has no pod template (set works on pods and the workloads that make them)", printers.ObjectName(t.Kind, t.Obj), t.Kind.Name)
		}
		if err := fn(spec); err != nil {
			return fmt.Errorf("%s: %w", printers.ObjectName(t.Kind, t.Obj), err)
		}
		nexts[i] = next
	}
	for i, t := range targets {
		after, changed, err := o.SendChange(ctx, t, nexts[i], cli.WriteOptions{DryRun: f.dryRun})
		if err != nil {
			return err
		}
		if !changed && out == nil {
			continue
		}
		if err := o.Printed(out, t.Kind, after, verb, f.dryRun); err != nil {
			return err
		}
	}
	if missing {
		return cli.ErrReported
	}
	return nil
}

// containersNamed returns the containers (init containers too) a name
// selects: "*" is all of them; a name that matches none is an error.
func containersNamed(spec *v1.PodSpec, name string) ([]*v1.Container, error) {
	all := append(append([]*v1.Container{}, spec.InitContainers...), spec.Containers...)
	if name == "*" {
		return all, nil
	}
	for _, c := range all {
		if c.Name == name {
			return []*v1.Container{c}, nil
		}
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	return nil, fmt.Errorf("unable to find container named %q (the pod has %s)", name, strings.Join(names, ", "))
}

func newSetImageCommand(o *cli.Options) *cobra.Command {
	f := &setFlags{}
	cmd := &cobra.Command{
		Use:   "image KIND NAME|KIND/NAME|-f FILE CONTAINER=IMAGE... ['*'=IMAGE]",
		Short: "Set the image of containers",
		Example: `  tugctl set image deploy/web app=registry.local/app:v2
  tugctl set image deploy,rs -l app=web '*=app:v3'`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			objArgs, assigns := splitAssignments(args)
			images := map[string]string{}
			var order []string
			for _, a := range assigns {
				name, image, ok := strings.Cut(a, "=")
				if !ok || name == "" || image == "" {
					return fmt.Errorf("%q: want CONTAINER=IMAGE", a)
				}
				if _, dup := images[name]; dup {
					return fmt.Errorf("container %q is given twice", name)
				}
				images[name] = image
				order = append(order, name)
			}
			if len(images) == 0 {
				return fmt.Errorf("at least one image update is required (CONTAINER=IMAGE)")
			}
			return runSet(cmd.Context(), o, objArgs, f, "image updated", func(spec *v1.PodSpec) error {
				for _, name := range order {
					cs, err := containersNamed(spec, name)
					if err != nil {
						return err
					}
					for _, c := range cs {
						c.Image = images[name]
					}
				}
				return nil
			})
		},
	}
	f.register(cmd)
	return cmd
}

type envFlags struct {
	setFlags
	container string
	list      bool
	from      string
	prefix    string
	keys      []string
	overwrite bool
}

func newSetEnvCommand(o *cli.Options) *cobra.Command {
	f := &envFlags{}
	cmd := &cobra.Command{
		Use:   "env KIND NAME|KIND/NAME|-f FILE KEY=VALUE... KEY-... [--from=configmap/NAME|secret/NAME] [-c CONTAINER] [--list]",
		Short: "Set or remove environment variables of containers",
		Long: `Set KEY=VALUE and remove KEY- environment variables of the containers (-c
names one, default all). --from=configmap/NAME or secret/NAME adds a
variable per key of that object (--keys: only those; --prefix: before each
name), each reading its value from the object (valueFrom). --list prints
the variables instead.`,
		Example: `  tugctl set env deploy/web LOG_LEVEL=debug MODE-
  tugctl set env deploy/web --from=configmap/settings --prefix=APP_
  tugctl set env pod/web-1 --list`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSetEnv(cmd.Context(), o, args, f)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "containers", "c", "*", "the container to change ('*': all)")
	fl.BoolVar(&f.list, "list", false, "print the containers' environment variables")
	fl.StringVar(&f.from, "from", "", "configmap/NAME or secret/NAME: a variable per key, read from it")
	fl.StringVar(&f.prefix, "prefix", "", "with --from: put this before each variable name")
	fl.StringSliceVar(&f.keys, "keys", nil, "with --from: only these keys")
	fl.BoolVar(&f.overwrite, "overwrite", true, "change variables that are already set; false leaves them")
	return cmd
}

func runSetEnv(ctx context.Context, o *cli.Options, args []string, f *envFlags) error {
	objArgs, assigns := splitAssignments(args)
	set := map[string]*v1.EnvVar{}
	var order, remove []string
	for _, a := range assigns {
		if k, v, ok := strings.Cut(a, "="); ok {
			if !validation.IsEnvVarName(k) {
				return fmt.Errorf("%q is not a valid key name: a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit", k)
			}
			set[k], order = &v1.EnvVar{Name: k, Value: v}, append(order, k)
			continue
		}
		k := strings.TrimSuffix(a, "-")
		if !validation.IsEnvVarName(k) {
			return fmt.Errorf("%q: want KEY=VALUE or KEY-", a)
		}
		remove = append(remove, k)
	}
	if f.from != "" {
		vars, err := envFrom(ctx, o, f)
		if err != nil {
			return err
		}
		for _, e := range vars {
			if _, given := set[e.Name]; !given {
				set[e.Name], order = e, append(order, e.Name)
			}
		}
	} else if f.prefix != "" || len(f.keys) > 0 {
		return fmt.Errorf("--prefix and --keys go with --from")
	}
	if f.list {
		return listEnv(ctx, o, objArgs, f)
	}
	if len(set) == 0 && len(remove) == 0 {
		return fmt.Errorf("at least one environment variable change is required (KEY=VALUE, KEY- or --from)")
	}
	return runSet(ctx, o, objArgs, &f.setFlags, "env updated", func(spec *v1.PodSpec) error {
		cs, err := containersNamed(spec, f.container)
		if err != nil {
			return err
		}
		for _, c := range cs {
			for _, k := range order {
				i := slices.IndexFunc(c.Env, func(e *v1.EnvVar) bool { return e.Name == k })
				switch {
				case i < 0:
					c.Env = append(c.Env, cloneEnv(set[k]))
				case f.overwrite:
					c.Env[i] = cloneEnv(set[k])
				}
			}
			c.Env = slices.DeleteFunc(c.Env, func(e *v1.EnvVar) bool { return slices.Contains(remove, e.Name) })
		}
		return nil
	})
}

func cloneEnv(e *v1.EnvVar) *v1.EnvVar { return proto.Clone(e).(*v1.EnvVar) }

// envFrom is a variable per key of --from's ConfigMap or Secret.
func envFrom(ctx context.Context, o *cli.Options, f *envFlags) ([]*v1.EnvVar, error) {
	kind, name, ok := strings.Cut(f.from, "/")
	k, err := cli.LookupKind(kind)
	if !ok || name == "" || err != nil || (k.Name != "ConfigMap" && k.Name != "Secret") {
		return nil, fmt.Errorf("--from %q: want configmap/NAME or secret/NAME", f.from)
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	var keys []string
	if k.Name == "ConfigMap" {
		cm, err := client.For[*v1.ConfigMap](c).Get(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("--from %s: %w", f.from, cli.ServerError(k, name, err))
		}
		keys = slices.Collect(maps.Keys(cm.Data))
	} else {
		s, err := client.For[*v1.Secret](c).Get(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("--from %s: %w", f.from, cli.ServerError(k, name, err))
		}
		keys = slices.Collect(maps.Keys(s.Data))
	}
	slices.Sort(keys)
	if len(f.keys) > 0 {
		for _, want := range f.keys {
			if !slices.Contains(keys, want) {
				return nil, fmt.Errorf("--keys: %s has no key %q", f.from, want)
			}
		}
		keys = f.keys
	}
	var out []*v1.EnvVar
	for _, key := range keys {
		n := f.prefix + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(key))
		if !validation.IsEnvVarName(n) {
			return nil, fmt.Errorf("--from %s: key %q makes %q, not a valid environment variable name", f.from, key, n)
		}
		ref := &v1.KeySelector{Name: name, Key: key}
		src := &v1.EnvVarSource{ConfigMapKeyRef: ref}
		if k.Name == "Secret" {
			src = &v1.EnvVarSource{SecretKeyRef: ref}
		}
		out = append(out, &v1.EnvVar{Name: n, ValueFrom: src})
	}
	return out, nil
}

// listEnv prints the containers' variables, as kubectl set env --list.
func listEnv(ctx context.Context, o *cli.Options, objArgs []string, f *envFlags) error {
	targets, missing, err := o.Select(ctx, objArgs, f.sel)
	if err != nil {
		return err
	}
	for _, t := range targets {
		spec, ok := cli.PodSpecOf(proto.Clone(t.Obj).(v1.Object))
		if !ok {
			return fmt.Errorf("%s: a %s has no pod template", printers.ObjectName(t.Kind, t.Obj), t.Kind.Name)
		}
		cs, err := containersNamed(spec, f.container)
		if err != nil {
			return err
		}
		for _, c := range cs {
			fmt.Fprintf(o.Out, "# %s %s, container %s\n", t.Kind.Name, t.Obj.GetMetadata().GetName(), c.Name)
			for _, e := range c.Env {
				switch {
				case e.ValueFrom.GetConfigMapKeyRef() != nil:
					r := e.ValueFrom.ConfigMapKeyRef
					fmt.Fprintf(o.Out, "# %s from configmap %s, key %s\n", e.Name, r.Name, r.Key)
				case e.ValueFrom.GetSecretKeyRef() != nil:
					r := e.ValueFrom.SecretKeyRef
					fmt.Fprintf(o.Out, "# %s from secret %s, key %s\n", e.Name, r.Name, r.Key)
				case e.ValueFrom.GetFieldRef() != nil:
					fmt.Fprintf(o.Out, "# %s from field path %s\n", e.Name, e.ValueFrom.FieldRef.FieldPath)
				default:
					fmt.Fprintf(o.Out, "%s=%s\n", e.Name, e.Value)
				}
			}
		}
	}
	if missing {
		return cli.ErrReported
	}
	return nil
}

func newSetResourcesCommand(o *cli.Options) *cobra.Command {
	f := &setFlags{}
	var container, limits, requests string
	cmd := &cobra.Command{
		Use:   "resources KIND NAME|KIND/NAME|-f FILE [--limits=cpu=200m,memory=512Mi] [--requests=cpu=100m] [-c CONTAINER]",
		Short: "Set the resource requests and limits of containers",
		Long: `Set resource requests and limits (cpu, memory, ephemeral-storage, ...) of
the containers (-c names one, default all): the resources named are set,
the others kept; a quantity of 0 removes that resource.`,
		Example:           "  tugctl set resources deploy/web -c app --limits=cpu=500m,memory=256Mi --requests=cpu=100m",
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			lim, err := parseResources("--limits", limits)
			if err != nil {
				return err
			}
			req, err := parseResources("--requests", requests)
			if err != nil {
				return err
			}
			if len(lim) == 0 && len(req) == 0 {
				return fmt.Errorf("you must specify an update to requests or limits (in the form of --requests/--limits)")
			}
			return runSet(cmd.Context(), o, args, f, "resource requirements updated", func(spec *v1.PodSpec) error {
				cs, err := containersNamed(spec, container)
				if err != nil {
					return err
				}
				for _, c := range cs {
					if c.Resources == nil {
						c.Resources = &v1.ResourceRequirements{}
					}
					c.Resources.Limits = setQuantities(c.Resources.Limits, lim)
					c.Resources.Requests = setQuantities(c.Resources.Requests, req)
					if len(c.Resources.Limits) == 0 && len(c.Resources.Requests) == 0 {
						c.Resources = nil
					}
				}
				return nil
			})
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&container, "containers", "c", "*", "the container to change ('*': all)")
	fl.StringVar(&limits, "limits", "", "RESOURCE=QUANTITY,... to set as limits")
	fl.StringVar(&requests, "requests", "", "RESOURCE=QUANTITY,... to set as requests")
	return cmd
}

// parseResources reads "cpu=200m,memory=512Mi"; "" is nothing.
func parseResources(flag, s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s %q: want RESOURCE=QUANTITY,... (cpu=200m,memory=512Mi)", flag, s)
		}
		q, err := resource.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s=%s: %v", flag, k, v, err)
		}
		if q.IsZero() {
			v = ""
		}
		out[k] = v
	}
	return out, nil
}

// setQuantities sets (or, for "", removes) each resource of set in m.
func setQuantities(m, set map[string]string) map[string]string {
	if len(set) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range set {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
