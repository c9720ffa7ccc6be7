package v1

import "google.golang.org/protobuf/proto"

// AsContainer is e as the Container it runs as: EphemeralContainer has
// Container's fields under the same names and numbers (Kubernetes'
// EphemeralContainerCommon), so the copy goes through the wire format and
// keeps every field, present and future; targetContainerName, which a
// Container has not, is dropped.
func (e *EphemeralContainer) AsContainer() *Container {
	b, err := proto.Marshal(e)
	if err != nil {
		// A message of this package always marshals.
		panic(err)
	}
	c := &Container{}
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, c); err != nil {
		panic(err)
	}
	return c
}
