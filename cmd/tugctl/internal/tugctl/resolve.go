package tugctl

import (
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ref is one object named on the command line.
type ref struct {
	kind *kinds.Kind
	name string
}

// resourceArgs are the objects a command line names, the ways kubectl
// accepts them:
//
//	KIND                 every object of the kind (kinds empty, refs nil)
//	KIND NAME...         named objects of one kind
//	KIND,KIND [NAME...]  several kinds
//	KIND/NAME...         objects of any kinds
//
// KIND is a Kind, plural or short name, any case ("po", "Pods",
// "deployments.apps"); "all" is pods, services, deployments and replicasets.
type resourceArgs struct {
	kinds []*kinds.Kind
	refs  []ref
}

func (r resourceArgs) named() bool { return len(r.refs) > 0 }

func parseResourceArgs(args []string) (resourceArgs, error) {
	var out resourceArgs
	if len(args) == 0 {
		return out, fmt.Errorf("you must specify the type of resource (one of: %s)", strings.Join(kindNames(), ", "))
	}
	if strings.Contains(args[0], "/") {
		for _, a := range args {
			kind, name, ok := strings.Cut(a, "/")
			if !ok || kind == "" || name == "" {
				return out, fmt.Errorf("%q: mix of KIND/NAME and KIND NAME arguments; write every object as KIND/NAME", a)
			}
			k, err := lookupKind(kind)
			if err != nil {
				return out, err
			}
			out.refs = append(out.refs, ref{k, name})
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
				out.kinds = append(out.kinds, k)
			}
			continue
		}
		k, err := lookupKind(kn)
		if err != nil {
			return out, err
		}
		out.kinds = append(out.kinds, k)
	}
	if len(out.kinds) == 0 {
		return out, fmt.Errorf("%q: no kind named", args[0])
	}
	for _, name := range args[1:] {
		if strings.Contains(name, "/") {
			return out, fmt.Errorf("%q: there is no need to name the kind twice: write %s %s or KIND/NAME alone", name, args[0], name[strings.Index(name, "/")+1:])
		}
		for _, k := range out.kinds {
			out.refs = append(out.refs, ref{k, name})
		}
	}
	return out, nil
}

// lookupKind resolves a kind name with an error listing the known ones.
func lookupKind(name string) (*kinds.Kind, error) {
	k, err := kinds.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the server doesn't have a resource type %q (known: %s)", name, strings.Join(kindNames(), ", "))
	}
	return k, nil
}

// kindNames lists the plural names users type.
func kindNames() []string {
	var out []string
	for _, k := range kinds.All() {
		out = append(out, k.Plural)
	}
	return out
}

// group is the API group of a kind: "" for the core kinds, "apps" for apps/v1.
func group(k *kinds.Kind) string {
	if i := strings.LastIndex(k.APIVersion, "/"); i > 0 {
		return k.APIVersion[:i]
	}
	return ""
}

// resourceName is how kubectl names a kind in "-o name" output and in
// messages: "pod", "deployment.apps".
func resourceName(k *kinds.Kind) string {
	n := strings.ToLower(k.Name)
	if g := group(k); g != "" {
		n += "." + g
	}
	return n
}

// objectName is "deployment.apps/nginx".
func objectName(k *kinds.Kind, obj v1.Object) string {
	return resourceName(k) + "/" + obj.GetMetadata().GetName()
}

// singleRef parses the one object of commands like scale and rollout:
// KIND/NAME or KIND NAME.
func singleRefs(args []string, allowed ...string) ([]ref, error) {
	r, err := parseResourceArgs(args)
	if err != nil {
		return nil, err
	}
	if !r.named() {
		return nil, fmt.Errorf("name the object: KIND/NAME or KIND NAME (e.g. deploy/nginx)")
	}
	for _, x := range r.refs {
		ok := len(allowed) == 0
		for _, a := range allowed {
			ok = ok || x.kind.Name == a
		}
		if !ok {
			return nil, fmt.Errorf("%s: not supported for %s (supported: %s)", x.name, x.kind.Plural, strings.Join(allowed, ", "))
		}
	}
	return r.refs, nil
}
