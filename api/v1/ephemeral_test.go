package v1

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestEphemeralContainerMirrorsContainer: every field of Container is in
// EphemeralContainer with its name, number, kind and cardinality (so
// AsContainer loses nothing), and EphemeralContainer adds only
// targetContainerName.
func TestEphemeralContainerMirrorsContainer(t *testing.T) {
	c := (&Container{}).ProtoReflect().Descriptor().Fields()
	e := (&EphemeralContainer{}).ProtoReflect().Descriptor().Fields()
	for i := range c.Len() {
		f := c.Get(i)
		g := e.ByNumber(f.Number())
		if g == nil || g.Name() != f.Name() || g.Kind() != f.Kind() || g.Cardinality() != f.Cardinality() ||
			(f.Kind() == protoreflect.MessageKind && g.Message().FullName() != f.Message().FullName()) {
			t.Errorf("Container.%s (%d) is not mirrored in EphemeralContainer", f.Name(), f.Number())
		}
	}
	for i := range e.Len() {
		if f := e.Get(i); c.ByNumber(f.Number()) == nil && f.Name() != "target_container_name" {
			t.Errorf("EphemeralContainer.%s has no Container field", f.Name())
		}
	}
	ec := &EphemeralContainer{Name: "debugger", Image: "busybox", Command: []string{"sh"}, Stdin: true, Tty: true,
		Env: []*EnvVar{{Name: "A", Value: "b"}}, TargetContainerName: "app", SecurityContext: &SecurityContext{Privileged: proto.Bool(true)}}
	want := &Container{Name: "debugger", Image: "busybox", Command: []string{"sh"}, Stdin: true, Tty: true,
		Env: []*EnvVar{{Name: "A", Value: "b"}}, SecurityContext: &SecurityContext{Privileged: proto.Bool(true)}}
	if got := ec.AsContainer(); !proto.Equal(got, want) {
		t.Errorf("AsContainer = %v, want %v", got, want)
	}
}
