// Package apierrors is Tugboat's one error table. Library code wraps one of
// the sentinel errors below with %w and a message that names the object or
// field; the gRPC edge maps the sentinel to a status code (ToGRPC, called
// once per server, from an interceptor: handlers return plain errors), and
// the client maps the code back (FromGRPC), so `errors.Is(err, ErrNotFound)`
// works on both sides of the wire.
package apierrors

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// The sentinels. Every error the API returns wraps exactly one of them.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("conflict")
	ErrInvalid       = errors.New("invalid")
	// ErrBadRequest is a request that cannot be read at all (not JSON, a
	// malformed patch): Kubernetes' 400 BadRequest beside 422 Invalid.
	ErrBadRequest      = errors.New("bad request")
	ErrExpired         = errors.New("resource version expired")
	ErrForbidden       = errors.New("forbidden")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrTooSlow         = errors.New("watcher too slow")
	ErrUnavailable     = errors.New("unavailable")
	// ErrTooManyRequests refuses a request for now, not for good: the
	// caller should retry later (an eviction a PodDisruptionBudget does not
	// allow yet; Kubernetes' 429 TooManyRequests).
	ErrTooManyRequests = errors.New("too many requests")
	// ErrResourceVersionTooLarge refuses a watch from a resource version
	// the server has not reached, even after waiting a few seconds:
	// Kubernetes' "Too large resource version" (504 Timeout; OutOfRange
	// on gRPC, which clients read as ErrExpired: re-list).
	ErrResourceVersionTooLarge = errors.New("too large resource version")
	// ErrLimitExceeded refuses what would pass a per-client limit (watches
	// per connection or per user): ResourceExhausted, Kubernetes' 429
	// (clients read the code as ErrTooSlow).
	ErrLimitExceeded = errors.New("limit exceeded")
)

// table maps each sentinel to its gRPC code; a code back to the first
// sentinel listed with it.
var table = []struct {
	err  error
	code codes.Code
}{
	{ErrNotFound, codes.NotFound},
	{ErrAlreadyExists, codes.AlreadyExists},
	{ErrConflict, codes.Aborted},
	{ErrInvalid, codes.InvalidArgument},
	{ErrBadRequest, codes.InvalidArgument},
	{ErrExpired, codes.OutOfRange},
	{ErrResourceVersionTooLarge, codes.OutOfRange},
	{ErrForbidden, codes.PermissionDenied},
	{ErrUnauthenticated, codes.Unauthenticated},
	{ErrTooSlow, codes.ResourceExhausted},
	{ErrLimitExceeded, codes.ResourceExhausted},
	{ErrUnavailable, codes.Unavailable},
	{ErrTooManyRequests, codes.FailedPrecondition},
}

// Error is an API error: a sentinel plus the human message. Fields lists
// the invalid fields of an ErrInvalid built by FieldErrors.Err or Invalid,
// so an edge can report them one by one (the Kubernetes door's
// details.causes); the message names them too.
type Error struct {
	Kind   error
	Msg    string
	Fields FieldErrors
	// ObjectKind and ObjectName name the object an ErrInvalid built by
	// FieldErrors.Err is about ("Pod", "web"), when known; for NotFound,
	// AlreadyExists and Conflict, its group resource ("deployments.apps")
	// and name.
	ObjectKind, ObjectName string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// New returns an error wrapping sentinel kind with a formatted message.
func New(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// NotFound says that the object name of resource (a group resource,
// "deployments.apps") does not exist, in Kubernetes' words: `deployments.apps
// "web" not found`. The error carries the resource and name (ObjectKind,
// ObjectName) across the wire for the Kubernetes door's Status details.
func NotFound(resource, name string) error {
	return objectError(ErrNotFound, resource, name, "%s %q not found", resource, name)
}

// AlreadyExists says that the object exists already: `deployments.apps
// "web" already exists`.
func AlreadyExists(resource, name string) error {
	return objectError(ErrAlreadyExists, resource, name, "%s %q already exists", resource, name)
}

// Conflict says that a write was based on a stale version, as Kubernetes
// says it.
func Conflict(resource, name string) error {
	return objectError(ErrConflict, resource, name,
		"Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", resource, name)
}

func objectError(kind error, resource, name, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), ObjectKind: resource, ObjectName: name}
}

// FieldError is one invalid field: "spec.containers[0].image: required".
type FieldError struct {
	Path string
	Msg  string
}

func (f FieldError) String() string { return f.Path + ": " + f.Msg }

// FieldErrors collects validation failures.
type FieldErrors []FieldError

// Add records a failure at path.
func (l *FieldErrors) Add(path, format string, args ...any) {
	*l = append(*l, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// maxFieldErrorLength caps one field's part of an Invalid message.
const maxFieldErrorLength = 1024

// Err returns nil for an empty list, else an ErrInvalid naming every field.
func (l FieldErrors) Err(kind, name string) error {
	if len(l) == 0 {
		return nil
	}
	parts := make([]string, len(l))
	for i, f := range l {
		parts[i] = f.String()
		if len(parts[i]) > maxFieldErrorLength {
			// A path can hold a user's map key; never echo a huge one.
			parts[i] = parts[i][:maxFieldErrorLength] + "..."
		}
	}
	prefix := kind
	if len(name) > 64 {
		prefix += fmt.Sprintf(" %q...", name[:64])
	} else if name != "" {
		prefix += " " + fmt.Sprintf("%q", name)
	}
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("%s is invalid: %s", prefix, strings.Join(parts, "; ")), Fields: l, ObjectKind: kind, ObjectName: name}
}

// Invalid returns an ErrInvalid for a single field.
func Invalid(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Kind: ErrInvalid, Msg: path + ": " + msg, Fields: FieldErrors{{Path: path, Msg: msg}}}
}

// ToGRPC maps err to a gRPC status error at the server edge. Errors that wrap
// no sentinel become Internal; context errors keep their codes.
func ToGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	for _, e := range table {
		if errors.Is(err, e.err) {
			return withFields(status.New(e.code, err.Error()), err).Err()
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// Code is the gRPC code ToGRPC gives err (OK for nil).
func Code(err error) codes.Code { return status.Code(ToGRPC(err)) }

// FromGRPC maps a gRPC status error back to an *Error wrapping the sentinel,
// so clients test errors with errors.Is. Other errors pass through.
func FromGRPC(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, e := range table {
		if st.Code() == e.code {
			out := &Error{Kind: e.err, Msg: st.Message()}
			readDetails(st, out)
			return out
		}
	}
	return err
}

// withFields carries err's field errors and the object they are about in
// st's details (google.rpc.BadRequest and ResourceInfo), so a client gets
// them back as Error.Fields, ObjectKind and ObjectName (tugctl edit lists
// the fields, as kubectl does, one per line).
func withFields(st *status.Status, err error) *status.Status {
	var ae *Error
	if !errors.As(err, &ae) || (len(ae.Fields) == 0 && ae.ObjectKind == "") {
		return st
	}
	var details []protoadapt.MessageV1
	if len(ae.Fields) > 0 {
		br := &errdetails.BadRequest{}
		for _, f := range ae.Fields {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: f.Path, Description: f.Msg})
		}
		details = append(details, br)
	}
	if ae.ObjectKind != "" {
		details = append(details, &errdetails.ResourceInfo{ResourceType: ae.ObjectKind, ResourceName: ae.ObjectName})
	}
	if d, err := st.WithDetails(details...); err == nil {
		return d
	}
	return st
}

// readDetails reads back into e what withFields put in st.
func readDetails(st *status.Status, e *Error) {
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.FieldViolations {
				e.Fields = append(e.Fields, FieldError{Path: v.Field, Msg: v.Description})
			}
		case *errdetails.ResourceInfo:
			e.ObjectKind, e.ObjectName = d.ResourceType, d.ResourceName
		}
	}
}

// IsNotFound and friends are shorthands for errors.Is.
func IsNotFound(err error) bool        { return errors.Is(err, ErrNotFound) }
func IsAlreadyExists(err error) bool   { return errors.Is(err, ErrAlreadyExists) }
func IsConflict(err error) bool        { return errors.Is(err, ErrConflict) }
func IsInvalid(err error) bool         { return errors.Is(err, ErrInvalid) }
func IsExpired(err error) bool         { return errors.Is(err, ErrExpired) }
func IsTooSlow(err error) bool         { return errors.Is(err, ErrTooSlow) }
func IsTooManyRequests(err error) bool { return errors.Is(err, ErrTooManyRequests) }
