package kinds

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Scale says where a scalable kind keeps its replica count and pod
// selector: what the scale subresource (autoscaling/v1 Scale) reads and
// writes, what a HorizontalPodAutoscaler scales and what a disruption
// budget counts as the expected pods. Paths are dotted protobuf field
// names ("spec.replicas"); replicas are int32 fields, the selector a
// LabelSelector.
type Scale struct {
	SpecReplicas   string // "spec.replicas"
	StatusReplicas string // "status.replicas"
	Selector       string // "spec.selector"
}

// replicaScale is the scale of the apps kinds (and any kind shaped like them).
var replicaScale = &Scale{SpecReplicas: "spec.replicas", StatusReplicas: "status.replicas", Selector: "spec.selector"}

// field walks path in m; create makes missing messages on the way.
func field(m protoreflect.Message, path string, create bool) (protoreflect.Message, protoreflect.FieldDescriptor) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(p))
		if fd == nil || fd.Message() == nil {
			return nil, nil
		}
		if !create && !m.Has(fd) {
			return nil, fd
		}
		m = m.Mutable(fd).Message()
	}
	return m, m.Descriptor().Fields().ByName(protoreflect.Name(parts[len(parts)-1]))
}

func (s *Scale) int32At(obj v1.Object, path string) int32 {
	m, fd := field(obj.ProtoReflect(), path, false)
	if m == nil || fd == nil || !m.Has(fd) {
		return 0
	}
	return int32(m.Get(fd).Int())
}

// Replicas is the object's desired replicas.
func (s *Scale) Replicas(obj v1.Object) int32 { return s.int32At(obj, s.SpecReplicas) }

// CurrentReplicas is the object's observed replicas.
func (s *Scale) CurrentReplicas(obj v1.Object) int32 { return s.int32At(obj, s.StatusReplicas) }

// SetReplicas sets the desired replicas.
func (s *Scale) SetReplicas(obj v1.Object, n int32) {
	m, fd := field(obj.ProtoReflect(), s.SpecReplicas, true)
	if m != nil && fd != nil {
		m.Set(fd, protoreflect.ValueOfInt32(n))
	}
}

// LabelSelector is the selector of the object's pods, or nil.
func (s *Scale) LabelSelector(obj v1.Object) *v1.LabelSelector {
	m, fd := field(obj.ProtoReflect(), s.Selector, false)
	if m == nil || fd == nil || !m.Has(fd) {
		return nil
	}
	sel, _ := m.Get(fd).Message().Interface().(*v1.LabelSelector)
	return sel
}
