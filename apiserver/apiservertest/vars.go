package apiservertest

import v1 "github.com/tugboat/tugboat/api/v1"

// nsGet is the readiness probe: the default namespace exists once the
// apiserver has bootstrapped.
var nsGet = &v1.GetRequest{Kind: "Namespace", Name: "default"}
