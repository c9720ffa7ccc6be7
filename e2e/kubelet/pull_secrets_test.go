package kubelet_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/runtime/registrytest"
)

// TestImagePullSecrets: a registry the test serves on node1's loopback behind
// basic auth has the busybox image. A pod without pull secrets fails
// with ErrImagePull naming the registry's 401, then ImagePullBackOff; a
// pod whose imagePullSecrets name a missing secret (a Warning event, the
// pull goes on) and a kubernetes.io/dockerconfigjson secret for the
// registry reaches Running, through the kubelet's keyring and the
// runtime's authenticated pull.
func TestImagePullSecrets(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	var archive bytes.Buffer
	if err := images.Build(context.Background(), "busybox", &archive, images.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	// The registry listens on node1's loopback (in its network namespace,
	// where its containerd runs); containerd, CRI and native, speaks
	// plain HTTP to localhost.
	node := c.Nodes[0]
	var l net.Listener
	if err := node.Host.Do(func() (err error) {
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewUnstartedServer(registrytest.Handler(t, archive.Bytes(), &registrytest.Auth{Username: "lab", Password: "s3cret"}))
	reg.Listener.Close()
	reg.Listener = l
	reg.Start()
	t.Cleanup(reg.Close)
	host := strings.Replace(l.Addr().String(), "127.0.0.1", "localhost", 1)
	image := host + "/" + registrytest.Repository + ":pullsecrets"
	ns := "pullsecrets"

	anon := busyboxPod(ns, "anonymous", node.Name, "exec sleep 3600")
	anon.Spec.Containers[0].Image = image
	createPod(t, c.Client, anon)
	p := waitPod(t, c.Client, ns, "anonymous", 90*time.Second, "ErrImagePull naming the 401", func(p *v1.Pod) bool {
		w := containerStatus(p, "main").GetState().GetWaiting()
		return w.GetReason() == "ErrImagePull" && strings.Contains(w.GetMessage(), "401 Unauthorized")
	})
	t.Logf("without credentials: %s", containerStatus(p, "main").GetState().GetWaiting().GetMessage())
	waitPod(t, c.Client, ns, "anonymous", 60*time.Second, "ImagePullBackOff", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetState().GetWaiting().GetReason() == "ImagePullBackOff"
	})
	waitEvent(t, c.Client, ns, "anonymous", "Failed: Failed to pull image", 10*time.Second)
	// Gone before the image is pulled, so that its retries cannot find it
	// on the node.
	if _, err := client.For[*v1.Pod](c.Client).Delete(context.Background(), ns, "anonymous", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c.Client, ns, "anonymous", 60*time.Second)

	auth := base64.StdEncoding.EncodeToString([]byte("lab:s3cret"))
	if _, err := client.For[*v1.Secret](c.Client).Create(context.Background(), &v1.Secret{
		Metadata: &v1.ObjectMeta{Name: "regcred", Namespace: ns}, Type: "kubernetes.io/dockerconfigjson",
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"` + host + `":{"username":"lab","password":"s3cret","auth":"` + auth + `"}}}`)},
	}); err != nil {
		t.Fatal(err)
	}
	withSecret := busyboxPod(ns, "with-secret", node.Name, "exec sleep 3600")
	withSecret.Spec.Containers[0].Image = image
	withSecret.Spec.ImagePullSecrets = []*v1.LocalObjectReference{{Name: "absent"}, {Name: "regcred"}}
	createPod(t, c.Client, withSecret)
	waitPod(t, c.Client, ns, "with-secret", 90*time.Second, "Running", running)
	waitEvent(t, c.Client, ns, "with-secret",
		"FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed.", 10*time.Second)
	waitEvent(t, c.Client, ns, "with-secret", "Successfully pulled image", 10*time.Second)
}
