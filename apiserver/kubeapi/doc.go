// Package kubeapi is the apiserver's second front door: the Kubernetes REST
// API over HTTPS, so that kubectl, client-go and the tools built on them
// work against Tugboat. It adds no storage, no authorization and no
// validation of its own: every request is turned into the call the gRPC
// door would get (Objects.Create, Get, List, Update, UpdateStatus, Patch,
// Delete, Watch, Bind, Evict; the NodeAPI relay for logs, exec, attach and
// port-forward) and run
// in-process through the same Backend — the same authentication (client
// certificate or bearer token), RBAC and node authorizer, admission,
// validation, storage, watch cache and audit log.
//
// A request's path:
//
//	ServeHTTP -> authenticate (Backend.Authenticate: 401 on bad credentials)
//	  -> route (/version, /api, /apis: discovery; /openapi/v2, /openapi/v3;
//	     /api/v1/..., /apis/GROUP/VERSION/...: a resource of the kind
//	     registry, api/kinds, looked up by group, version and plural: no
//	     handler per kind)
//	  -> decode the body with the manifest codec (api/manifest), the one
//	     that reads tugctl's manifests, so both doors refuse the same fields
//	  -> Backend.Call(method, request) -> the gRPC service's handler
//	  -> encode the answer in Kubernetes' shape (manifest.ToMap), a Table
//	     (api/table, the columns tugctl prints) when the client asks for
//	     one, or a watch stream of JSON events
//	  -> errors: the apierrors sentinel a handler returned, mapped once
//	     (status.go) to a metav1.Status with Kubernetes' HTTP code and
//	     reason, details.causes naming each invalid field.
//
// What is Kubernetes' and not Tugboat's is done here: discovery documents,
// OpenAPI (from the kind registry and the protobuf descriptors, package
// api/openapi), list and watch envelopes, watch-list (sendInitialEvents),
// tables, the scale subresource (read and written through Get and Update),
// fieldValidation, dryRun, and the streaming protocols of log, exec,
// attach and port-forward (WebSocket channel.k8s.io), relayed to the
// kubelet over the tunnel the gRPC relay already uses.
//
// Contract: a request is authorized exactly as the same gRPC call is;
// nothing is stored that the gRPC door would refuse; a handler never
// writes partial JSON for a failed request (the Status is the whole body).
package kubeapi
