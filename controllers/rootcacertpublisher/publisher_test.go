package rootcacertpublisher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/rootcacertpublisher"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjAAMB4XDTI2MDEwMTAwMDAwMFoXDTM2MDEwMTAwMDAwMFowADBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABA==\n-----END CERTIFICATE-----\n"

func waitCA(t *testing.T, ctx context.Context, c *client.Client, ns string) *v1.ConfigMap {
	t.Helper()
	var got *v1.ConfigMap
	wait.Eventually(t, 15*time.Second, ns+"/kube-root-ca.crt published", func() error {
		cm, err := client.For[*v1.ConfigMap](c).Get(ctx, ns, rootcacertpublisher.ConfigMapName)
		if err != nil {
			return err
		}
		if cm.Data["ca.crt"] != testCA || len(cm.Data) != 1 {
			return fmt.Errorf("data %v", cm.Data)
		}
		if cm.GetMetadata().GetAnnotations()[rootcacertpublisher.DescriptionKey] != rootcacertpublisher.Description {
			return fmt.Errorf("annotations %v", cm.GetMetadata().GetAnnotations())
		}
		got = cm
		return nil
	})
	return got
}

func TestPublishesRecreatesAndRestores(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	c := s.Client
	d := controllertest.Deps(ctx, c)
	ctrl, err := rootcacertpublisher.New(d, rootcacertpublisher.Config{RootCA: []byte(testCA)})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ctrl)

	// Every namespace, those there before and one made after.
	waitCA(t, ctx, c, "default")
	waitCA(t, ctx, c, "kube-system")
	if _, err := client.For[*v1.Namespace](c).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	waitCA(t, ctx, c, "team-a")

	// Deleted: made again.
	cms := client.For[*v1.ConfigMap](c)
	if _, err := cms.Delete(ctx, "team-a", rootcacertpublisher.ConfigMapName, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCA(t, ctx, c, "team-a")

	// Changed: its data is put back; a label the user added stays.
	cm := waitCA(t, ctx, c, "default")
	cm.Data = map[string]string{"ca.crt": "not a CA", "extra": "x"}
	cm.Metadata.Labels = map[string]string{"mine": "yes"}
	delete(cm.Metadata.Annotations, rootcacertpublisher.DescriptionKey)
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if got := waitCA(t, ctx, c, "default"); got.GetMetadata().GetLabels()["mine"] != "yes" {
		t.Errorf("the user's label was dropped: %v", got.GetMetadata().GetLabels())
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		ca string
		ok bool
	}{{"", true}, {testCA, true}, {"not pem", false}, {"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", false}} {
		cfg := rootcacertpublisher.Config{RootCA: []byte(c.ca)}
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%q: Validate() = %v, want ok %v", c.ca, err, c.ok)
		}
	}
}
