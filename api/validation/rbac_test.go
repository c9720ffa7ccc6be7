package validation_test

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestRBACValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"role binding", func() v1.Object {
			return &v1.RoleBinding{Metadata: &v1.ObjectMeta{Name: "b", Namespace: "default"}, Subjects: []*v1.RBACSubject{{Kind: "Robot", Name: "x"}}}
		}, []string{"subjects[0].kind", "roleRef: required"}},
	})
}
