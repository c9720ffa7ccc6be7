package printers

import (
	"fmt"
	"io"
	"strings"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// WriteObjects prints objects in a document format: yaml, json (one
// object alone when single is set, else a List) or name.
func WriteObjects(w io.Writer, objs []v1.Object, output string, single bool) error {
	switch output {
	case Name:
		for _, o := range objs {
			k, err := kinds.ForMessage(o)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, ObjectName(k, o))
		}
		return nil
	case YAML, JSON:
		f := manifest.YAML
		if output == JSON {
			f = manifest.JSON
		}
		var out []byte
		var err error
		if single && len(objs) == 1 {
			out, err = manifest.Marshal(objs[0], f)
		} else {
			out, err = manifest.MarshalList(objs, f)
		}
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return fmt.Errorf("output %q is not a document format", output)
}

// Group is the API group of a kind: "" for the core kinds, "apps" for apps/v1.
func Group(k *kinds.Kind) string {
	if i := strings.LastIndex(k.APIVersion, "/"); i > 0 {
		return k.APIVersion[:i]
	}
	return ""
}

// ResourceName is how kubectl names a kind in "-o name" output and in
// messages: "pod", "deployment.apps".
func ResourceName(k *kinds.Kind) string {
	n := strings.ToLower(k.Name)
	if g := Group(k); g != "" {
		n += "." + g
	}
	return n
}

// ObjectName is "deployment.apps/nginx".
func ObjectName(k *kinds.Kind, obj v1.Object) string {
	return ResourceName(k) + "/" + obj.GetMetadata().GetName()
}

// QualifiedPlural is "pods", "deployments.apps": how kubectl names a kind
// in server messages.
func QualifiedPlural(k *kinds.Kind) string {
	if g := Group(k); g != "" {
		return k.Plural + "." + g
	}
	return k.Plural
}
