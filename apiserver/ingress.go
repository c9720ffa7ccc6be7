package apiserver

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// defaultIngressClass is the class every cluster starts with (created when
// missing at start, like the default StorageClass): tugboat, served by
// every node's proxy (proxy/ingress), the default class.
func defaultIngressClass() *v1.IngressClass {
	return &v1.IngressClass{
		Metadata: &v1.ObjectMeta{Name: "tugboat", Annotations: map[string]string{validation.DefaultIngressClassAnnotation: "true"},
			Labels: map[string]string{"kubernetes.io/bootstrapping": "defaults"}},
		Spec: &v1.IngressClassSpec{Controller: validation.IngressController},
	}
}
