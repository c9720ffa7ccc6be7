package validation_test

import (
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Each API group's kinds are tested in the group's file (core_test.go,
// apps_test.go, coordination_test.go, rbac_test.go), as the validation itself is split.

// validate defaults and validates obj as the apiserver does.
func validate(obj v1.Object) string {
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return err.Error()
	}
	k.Default(obj)
	if err := k.Validate(obj).Err(k.Name, obj.GetMetadata().GetName()); err != nil {
		return err.Error()
	}
	return ""
}

// validationCase is one object and the error substrings it must produce.
type validationCase struct {
	name   string
	obj    func() v1.Object
	errors []string // substrings; none means valid
}

// runValidation validates each case's object as the apiserver does.
func runValidation(t *testing.T, cases []validationCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := validate(c.obj())
			if len(c.errors) == 0 {
				if got != "" {
					t.Fatalf("want valid, got %s", got)
				}
				return
			}
			if got == "" {
				t.Fatalf("want errors %v, got none", c.errors)
			}
			for _, want := range c.errors {
				if !strings.Contains(got, want) {
					t.Errorf("error %q does not contain %q", got, want)
				}
			}
		})
	}
}
