package cli

import (
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
)

// Ref is one object named on the command line.
type Ref struct {
	Kind *kinds.Kind
	Name string
	// Namespace is the object's when it is known (a manifest's); empty
	// is the namespace of the request.
	Namespace string
}

// ResourceArgs are the objects a command line names, the ways kubectl
// accepts them:
//
//	KIND                 every object of the kind (kinds empty, refs nil)
//	KIND NAME...         named objects of one kind
//	KIND,KIND [NAME...]  several kinds
//	KIND/NAME...         objects of any kinds
//
// KIND is a Kind, plural or short name, any case ("po", "Pods",
// "deployments.apps"); "all" is pods, services, deployments and replicasets.
type ResourceArgs struct {
	Kinds []*kinds.Kind
	Refs  []Ref
}

// Named reports whether the command line names objects.
func (r ResourceArgs) Named() bool { return len(r.Refs) > 0 }

// ParseResourceArgs reads the objects a command line names.
func ParseResourceArgs(args []string) (ResourceArgs, error) {
	var out ResourceArgs
	if len(args) == 0 {
		return out, fmt.Errorf("you must specify the type of resource (one of: %s)", strings.Join(KindNames(), ", "))
	}
	if strings.Contains(args[0], "/") {
		for _, a := range args {
			kind, name, ok := strings.Cut(a, "/")
			if !ok || kind == "" || name == "" {
				return out, fmt.Errorf("%q: mix of KIND/NAME and KIND NAME arguments; write every object as KIND/NAME", a)
			}
			k, err := LookupKind(kind)
			if err != nil {
				return out, err
			}
			out.Refs = append(out.Refs, Ref{Kind: k, Name: name})
		}
		return out, nil
	}
	for _, kn := range strings.Split(args[0], ",") {
		if kn == "" {
			continue
		}
		if strings.EqualFold(kn, "all") {
			for _, n := range []string{"Pod", "Service", "Deployment", "ReplicaSet"} {
				k, _ := kinds.Lookup(n)
				out.Kinds = append(out.Kinds, k)
			}
			continue
		}
		k, err := LookupKind(kn)
		if err != nil {
			return out, err
		}
		out.Kinds = append(out.Kinds, k)
	}
	if len(out.Kinds) == 0 {
		return out, fmt.Errorf("%q: no kind named", args[0])
	}
	for _, name := range args[1:] {
		if strings.Contains(name, "/") {
			return out, fmt.Errorf("%q: there is no need to name the kind twice: write %s %s or KIND/NAME alone", name, args[0], name[strings.Index(name, "/")+1:])
		}
		for _, k := range out.Kinds {
			out.Refs = append(out.Refs, Ref{Kind: k, Name: name})
		}
	}
	return out, nil
}

// LookupKind resolves a kind name with an error listing the known ones.
func LookupKind(name string) (*kinds.Kind, error) {
	k, err := kinds.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the server doesn't have a resource type %q (known: %s)", name, strings.Join(KindNames(), ", "))
	}
	return k, nil
}

// KindNames lists the plural names users type.
func KindNames() []string {
	var out []string
	for _, k := range kinds.All() {
		out = append(out, k.Plural)
	}
	return out
}

// SingleRefs parses the objects of commands like scale and rollout:
// KIND/NAME... or KIND NAME..., of the allowed kinds (any when none).
func SingleRefs(args []string, allowed ...string) ([]Ref, error) {
	r, err := ParseResourceArgs(args)
	if err != nil {
		return nil, err
	}
	if !r.Named() {
		return nil, fmt.Errorf("name the object: KIND/NAME or KIND NAME (e.g. deploy/nginx)")
	}
	for _, x := range r.Refs {
		ok := len(allowed) == 0
		for _, a := range allowed {
			ok = ok || x.Kind.Name == a
		}
		if !ok {
			return nil, fmt.Errorf("%s: not supported for %s (supported: %s)", x.Name, x.Kind.Plural, strings.Join(allowed, ", "))
		}
	}
	return r.Refs, nil
}
