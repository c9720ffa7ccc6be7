// Command incluster is what an application in a pod does to reach the
// API: client-go's rest.InClusterConfig (the token and ca.crt under
// /var/run/secrets/kubernetes.io/serviceaccount, the address from
// KUBERNETES_SERVICE_HOST and _PORT), then a SelfSubjectReview over the
// Kubernetes HTTP API. It prints the username it was authenticated as.
// The kubelet e2e tests run it in a pod from a hostPath.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "incluster:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 20 * time.Second
	c, err := authclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r, err := c.SelfSubjectReviews().Create(context.Background(), &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Println(r.Status.UserInfo.Username)
	return nil
}
