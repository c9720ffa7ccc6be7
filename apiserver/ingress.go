package apiserver

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// ingressAdmission is Kubernetes' DefaultIngressClass plugin: a new
// Ingress without spec.ingressClassName (and without the deprecated
// kubernetes.io/ingress.class annotation) gets the default IngressClass,
// the newest when several are marked default (as Kubernetes since 1.30);
// none marked: it is stored without a class.
type ingressAdmission struct{ st *storage.Store }

func (a ingressAdmission) Admit(ctx context.Context, obj, old v1.Object) error {
	if old != nil {
		return nil
	}
	ing := obj.(*v1.Ingress)
	if ing.GetSpec() == nil || ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.GetMetadata().GetAnnotations()[validation.IngressClassAnnotation]; ok {
		return nil
	}
	k, _ := kinds.Lookup("IngressClass")
	res, err := a.st.List(ctx, k, storage.ListOptions{})
	if err != nil {
		return err
	}
	var def v1.Object
	for _, o := range res.Items {
		if o.GetMetadata().GetAnnotations()[validation.DefaultIngressClassAnnotation] != "true" {
			continue
		}
		if def == nil || o.GetMetadata().GetCreationTimestamp().AsTime().After(def.GetMetadata().GetCreationTimestamp().AsTime()) {
			def = o
		}
	}
	if def != nil {
		ing.Spec.IngressClassName = proto.String(def.GetMetadata().GetName())
	}
	return nil
}

func (ingressAdmission) Release(context.Context, v1.Object) {}

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
