package kubeapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
)

// The HTTP door's one error table: each apierrors sentinel (the same
// errors the gRPC door maps to status codes in one interceptor) becomes a
// metav1.Status with Kubernetes' HTTP code and reason.
var statusTable = []struct {
	err    error
	code   int
	reason string
}{
	{apierrors.ErrNotFound, http.StatusNotFound, "NotFound"},
	{apierrors.ErrAlreadyExists, http.StatusConflict, "AlreadyExists"},
	{apierrors.ErrConflict, http.StatusConflict, "Conflict"},
	{apierrors.ErrInvalid, http.StatusUnprocessableEntity, "Invalid"},
	{apierrors.ErrBadRequest, http.StatusBadRequest, "BadRequest"},
	{apierrors.ErrExpired, http.StatusGone, "Expired"},
	{apierrors.ErrResourceVersionTooLarge, http.StatusGatewayTimeout, "Timeout"},
	{apierrors.ErrForbidden, http.StatusForbidden, "Forbidden"},
	{apierrors.ErrUnauthenticated, http.StatusUnauthorized, "Unauthorized"},
	{apierrors.ErrTooSlow, http.StatusTooManyRequests, "TooManyRequests"},
	{apierrors.ErrTooManyRequests, http.StatusTooManyRequests, "TooManyRequests"},
	{apierrors.ErrLimitExceeded, http.StatusTooManyRequests, "TooManyRequests"},
	{apierrors.ErrUnavailable, http.StatusServiceUnavailable, "ServiceUnavailable"},
	{errMethodNotAllowed, http.StatusMethodNotAllowed, "MethodNotAllowed"},
	{errUnsupportedMedia, http.StatusUnsupportedMediaType, "UnsupportedMediaType"},
}

// errMethodNotAllowed is an HTTP method a path does not serve;
// errUnsupportedMedia a body type the door does not read.
var (
	errMethodNotAllowed = errors.New("method not allowed")
	errUnsupportedMedia = errors.New("unsupported media type")
)

// Status is metav1.Status.
type Status struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   struct{}       `json:"metadata"`
	Status     string         `json:"status"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *StatusDetails `json:"details,omitempty"`
	Code       int            `json:"code"`
}

// StatusDetails is metav1.StatusDetails.
type StatusDetails struct {
	Name   string        `json:"name,omitempty"`
	Group  string        `json:"group,omitempty"`
	Kind   string        `json:"kind,omitempty"`
	UID    string        `json:"uid,omitempty"`
	Causes []StatusCause `json:"causes,omitempty"`
}

// StatusCause is metav1.StatusCause.
type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// target names the object a request was about, for Status details.
type target struct {
	group, resource, name string
}

// statusOf maps err to a Status.
func statusOf(err error, t target) *Status {
	err = apierrors.FromGRPC(err)
	st := &Status{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: err.Error(), Code: http.StatusInternalServerError, Reason: "InternalError"}
	found := false
	for _, e := range statusTable {
		if errors.Is(err, e.err) {
			st.Code, st.Reason, found = e.code, e.reason, true
			break
		}
	}
	if !found {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			st.Code, st.Reason = http.StatusGatewayTimeout, "Timeout"
		case errors.Is(err, context.Canceled):
			st.Code, st.Reason = 499, "Canceled"
		}
	}
	if t.resource != "" || t.name != "" {
		st.Details = &StatusDetails{Name: t.name, Group: t.group, Kind: t.resource}
	}
	var ae *apierrors.Error
	if errors.As(err, &ae) && ae.ObjectKind != "" && objectStatus(err) {
		// The object the error names (a create's missing namespace is
		// not the created object): details as Kubernetes fills them.
		resource, group, _ := strings.Cut(ae.ObjectKind, ".")
		st.Details = &StatusDetails{Name: ae.ObjectName, Group: group, Kind: resource}
	}
	if errors.As(err, &ae) && len(ae.Fields) > 0 {
		if st.Details == nil {
			st.Details = &StatusDetails{}
		}
		// An Invalid Status names the object by its Kind, as kubectl
		// prints it: The Pod "web" is invalid: ...
		if ae.ObjectKind != "" && ae.ObjectKind != "object" {
			st.Details.Kind = ae.ObjectKind
		}
		if ae.ObjectName != "" {
			st.Details.Name = ae.ObjectName
		}
		for _, f := range ae.Fields {
			st.Details.Causes = append(st.Details.Causes, StatusCause{Type: causeType(f.Msg), Message: f.Msg, Field: f.Path})
		}
	}
	return st
}

// objectStatus reports whether err is one whose ObjectKind is a group
// resource (apierrors.NotFound, AlreadyExists, Conflict).
func objectStatus(err error) bool {
	return errors.Is(err, apierrors.ErrNotFound) || errors.Is(err, apierrors.ErrAlreadyExists) || errors.Is(err, apierrors.ErrConflict)
}

// causeType is Kubernetes' CauseType for a field error's message.
func causeType(msg string) string {
	switch {
	case msg == "required":
		return "FieldValueRequired"
	case len(msg) >= 13 && msg[:13] == "unknown field":
		return "FieldValueNotSupported"
	}
	return "FieldValueInvalid"
}

// success is the Status a delete of a collection, or of an object that is
// gone at once, answers.
func success(t target) *Status {
	return &Status{Kind: "Status", APIVersion: "v1", Status: "Success", Code: http.StatusOK,
		Details: &StatusDetails{Name: t.name, Group: t.group, Kind: t.resource}}
}
