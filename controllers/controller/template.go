package controller

import (
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// CanonicalTemplate is t as Kubernetes' Go types see it, for comparing
// and hashing templates: a field that is a plain struct there (a
// container's resources, the template's metadata) has no "unset" state,
// so an empty one is the same as none. kubectl rollout undo sends a
// template through those types ("resources":{}), and the template rolled
// back to must still be found equal to the revision it came from. t is
// not changed; it is returned itself when it is already canonical.
func CanonicalTemplate(t *v1.PodTemplateSpec) *v1.PodTemplateSpec {
	if canonical(t) {
		return t
	}
	c := proto.Clone(t).(*v1.PodTemplateSpec)
	if m := c.GetMetadata(); m != nil && proto.Size(m) == 0 {
		c.Metadata = nil
	}
	if s := c.GetSpec(); s != nil {
		for _, cs := range [][]*v1.Container{s.Containers, s.InitContainers} {
			for _, ctr := range cs {
				if r := ctr.GetResources(); r != nil && proto.Size(r) == 0 {
					ctr.Resources = nil
				}
			}
		}
	}
	return c
}

func canonical(t *v1.PodTemplateSpec) bool {
	if m := t.GetMetadata(); m != nil && proto.Size(m) == 0 {
		return false
	}
	for _, cs := range [][]*v1.Container{t.GetSpec().GetContainers(), t.GetSpec().GetInitContainers()} {
		for _, ctr := range cs {
			if r := ctr.GetResources(); r != nil && proto.Size(r) == 0 {
				return false
			}
		}
	}
	return true
}
