package apierrors

import (
	"errors"
	"testing"
)

// An invalid object's field errors cross the gRPC edge: the client gets
// the same message, the sentinel and each field.
func TestFieldErrorsCrossTheWire(t *testing.T) {
	var fe FieldErrors
	fe.Add("spec.replicas", "must be >= 0")
	fe.Add("spec.template.spec.containers[0].image", "required")
	in := fe.Err("Deployment", "web")
	out := FromGRPC(ToGRPC(in))
	var ae *Error
	if !errors.As(out, &ae) || !IsInvalid(out) || out.Error() != in.Error() {
		t.Fatalf("FromGRPC(ToGRPC(%v)) = %v", in, out)
	}
	if len(ae.Fields) != 2 || ae.Fields[0] != fe[0] || ae.Fields[1] != fe[1] || ae.ObjectKind != "Deployment" || ae.ObjectName != "web" {
		t.Errorf("after the round trip: fields %v (want %v), object %s %q", ae.Fields, fe, ae.ObjectKind, ae.ObjectName)
	}
	if nf := FromGRPC(ToGRPC(NotFound("pods", "x"))); !IsNotFound(nf) || nf.(*Error).Fields != nil {
		t.Errorf("a NotFound round trip: %#v", nf)
	}
}
