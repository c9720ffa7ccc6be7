package kubeapi

import (
	"encoding/json"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Kubernetes' protobuf encoding of request bodies. client-go's typed
// clients send built-in kinds as application/vnd.kubernetes.protobuf by
// default; the door reads such a body into k8s.io/api's Go type (only
// for decoding: nothing else uses those types), writes it as JSON, and
// from there on it is a JSON body like any other, read by the manifest
// codec. Answers are always JSON, which those clients accept too.

const protobufType = "application/vnd.kubernetes.protobuf"

var protobufDecoder = sync.OnceValue(func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme,
		rbacv1.AddToScheme, policyv1.AddToScheme, autoscalingv1.AddToScheme, authorizationv1.AddToScheme, authenticationv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the schemes are static: a failure is a build defect
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s).UniversalDeserializer()
})

func isProtobuf(contentType string) bool { return strings.HasPrefix(contentType, protobufType) }

// protobufToJSON turns a Kubernetes protobuf body into the object's JSON.
func protobufToJSON(body []byte) ([]byte, error) {
	obj, gvk, err := protobufDecoder().Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.New(apierrors.ErrBadRequest, "cannot read the protobuf body: %v", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, apierrors.New(apierrors.ErrBadRequest, "cannot convert the protobuf body to JSON: %v", err)
	}
	return b, nil
}
