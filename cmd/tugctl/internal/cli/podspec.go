package cli

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// PodSpecOf is the pod spec an object runs, for the commands that change
// containers (set image, set env, set resources): a pod's own spec, the
// pod template's of a workload (spec.template.spec: deployments, replica
// sets, daemon sets, jobs, ...) or of a job template
// (spec.jobTemplate.spec.template.spec: cron jobs). Found through the
// descriptors, so a new workload kind needs nothing here. ok is false for
// a kind that runs no pods.
func PodSpecOf(obj v1.Object) (spec *v1.PodSpec, ok bool) {
	m := obj.ProtoReflect()
	for range 4 {
		fd := m.Descriptor().Fields().ByName("spec")
		if fd == nil || fd.Kind() != protoreflect.MessageKind {
			return nil, false
		}
		if s, ok := m.Mutable(fd).Message().Interface().(*v1.PodSpec); ok {
			return s, true
		}
		next := m.Get(fd).Message()
		tmpl := next.Descriptor().Fields().ByName("template")
		if tmpl == nil {
			tmpl = next.Descriptor().Fields().ByName("job_template")
		}
		if tmpl == nil || tmpl.Kind() != protoreflect.MessageKind || !next.Has(tmpl) {
			return nil, false
		}
		m = next.Mutable(tmpl).Message()
	}
	return nil, false
}
